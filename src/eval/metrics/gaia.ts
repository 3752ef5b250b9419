/**
 * GAIA `question_scorer` (the leaderboard's scorer.py, Mialon et al., 2023), with its quirks kept:
 * - gold that Python float() parses is a number: the prediction is compared as a float after
 *   removing `$`, `%` and `,`; a prediction that still does not parse becomes inf, so gold "inf"
 *   matches any unparseable answer and gold "nan" matches nothing;
 * - else gold containing `,` or `;` is a list: split both on `[,;]`, same length required, each
 *   element compared as a number (if the gold element is one) or as a string without whitespace,
 *   lowercased, punctuation kept ("$1,000" as gold is therefore the list ["$1", "000"]);
 * - else strings without whitespace, lowercased, ASCII punctuation removed.
 */
import { pyFloat, pyRemovePunctuation, pyRemoveWhitespace } from '../../data/answers/pytext.ts';

/** `normalize_number_str`: strip `$ % ,` then float(); unparseable -> inf (as the scorer does). */
export function normalizeNumberStr(s: string): number {
  const v = pyFloat(s.replace(/[$%,]/g, ''));
  return v === null ? Infinity : v;
}

/** `normalize_str`: drop all whitespace, lowercase, optionally drop ASCII punctuation. */
export function normalizeGaiaStr(s: string, removePunct = true): string {
  const lowered = pyRemoveWhitespace(s).toLowerCase();
  return removePunct ? pyRemovePunctuation(lowered) : lowered;
}

/** `split_string`: Python `re.split('[,;]', s)` (empty pieces kept). */
function splitGaiaList(s: string): string[] {
  return s.split(/[,;]/);
}

const isFloat = (s: string): boolean => pyFloat(s) !== null;

/** True when the model answer is correct; a null answer is scored as the string "None". */
export function gaiaQuestionScorer(modelAnswer: string | null, groundTruth: string): boolean {
  const answer = modelAnswer ?? 'None';
  if (isFloat(groundTruth)) return normalizeNumberStr(answer) === pyFloat(groundTruth);
  if (groundTruth.includes(',') || groundTruth.includes(';')) {
    const gt = splitGaiaList(groundTruth);
    const ma = splitGaiaList(answer);
    if (gt.length !== ma.length) return false;
    return gt.every((g, i) =>
      isFloat(g)
        ? normalizeNumberStr(ma[i]) === pyFloat(g)
        : normalizeGaiaStr(ma[i], false) === normalizeGaiaStr(g, false),
    );
  }
  return normalizeGaiaStr(answer) === normalizeGaiaStr(groundTruth);
}
