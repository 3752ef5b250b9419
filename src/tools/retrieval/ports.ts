/**
 * Ports a client of the retrieval protocol cannot reach: the WHATWG Fetch standard's "bad ports"
 * (https://fetch.spec.whatwg.org/#port-blocking), which Node's fetch (undici, our own client in
 * remote.ts) and browsers refuse to connect to ("bad port"). A server listening on one of them
 * would start and then never be reached, so `sharp serve retrieval --port` refuses them, and a
 * retriever URL naming one is refused before any search.
 */
const BAD_PORTS = new Set([
  1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110,
  111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532,
  540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061,
  6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

export function isBlockedPort(port: number): boolean {
  return BAD_PORTS.has(port);
}

/** Why `port` cannot be a server's --port (0 = any free one), or null when it can. */
export function listenPortProblem(port: number): string | null {
  if (!Number.isInteger(port) || port < 0 || port > 65535) return `${port} is not a port number (0-65535)`;
  if (isBlockedPort(port))
    return (
      `${port} is a port that fetch clients refuse to connect to (the Fetch standard's "bad ports"); ` +
      'choose another'
    );
  return null;
}
