"""Independent Python re-implementation of the MuSiQue evaluate_v1.0.py logic (written for sharp-rl), used by the MuSiQue scorer tests to cross-check the TypeScript scorer on the same files.
Usage: python3 musique_reference.py PREDICTIONS.jsonl GOLD.jsonl  -> prints the metrics JSON."""
import collections
import json
import re
import string
import sys


def norm(s):
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s, flags=re.UNICODE)
    return " ".join(s.split())


def toks(s):
    return norm(s).split() if s else []


def exact(a, b):
    return int(norm(a) == norm(b))


def f1(a, b):
    g, p = toks(a), toks(b)
    same = sum((collections.Counter(g) & collections.Counter(p)).values())
    if not g or not p:
        return int(g == p)
    if same == 0:
        return 0
    pr, rc = same / len(p), same / len(g)
    return 2 * pr * rc / (pr + rc)


def sp_f1(pred, gold):
    pred, gold = set(map(int, pred)), set(map(int, gold))
    tp = len(pred & gold)
    fp, fn = len(pred - gold), len(gold - pred)
    pr = tp / (tp + fp) if tp + fp else 0.0
    rc = tp / (tp + fn) if tp + fn else 0.0
    out = 2 * pr * rc / (pr + rc) if pr + rc else 0.0
    return 1.0 if not pred and not gold else out


def read(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main(pred_path, gold_path):
    preds, golds = read(pred_path), read(gold_path)
    assert len(preds) == len(golds)
    em = f = sp = 0.0
    n = 0
    groups = collections.OrderedDict()
    full = False
    for g, p in zip(golds, preds):
        assert g["id"] == p["id"]
        answers = [g["answer"]] + g["answer_aliases"]
        gsp = [q["idx"] for q in g["paragraphs"] if q["is_supporting"]]
        if g["answerable"]:
            em += max(exact(p["predicted_answer"], a) for a in answers)
            f += max(f1(p["predicted_answer"], a) for a in answers)
            sp += sp_f1(p["predicted_support_idxs"], gsp)
            n += 1
        else:
            full = True
        grp = groups.setdefault(g["id"], {"gold": [], "pred": []})
        if g["answerable"]:
            grp.update(answers=answers, ans=p["predicted_answer"], gsp=gsp, psp=p["predicted_support_idxs"])
        grp["gold"].append(g["answerable"])
        grp["pred"].append(p["predicted_answerable"])
    out = {"answer_f1": round(f / n if n else 0, 3), "answer_em": round(em / n if n else 0, 3), "support_f1": round(sp / n if n else 0, 3)}
    if full:
        ga = gs = 0.0
        for grp in groups.values():
            if grp["pred"] == grp["gold"]:
                ga += max(f1(grp["ans"], a) for a in grp["answers"])
                gs += sp_f1(grp["psp"], grp["gsp"])
        out["group_answer_sufficiency_f1"] = round(ga / len(groups), 3)
        out["group_support_sufficiency_f1"] = round(gs / len(groups), 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
