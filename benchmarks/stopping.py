"""Why a model's middles do not stop: how they end, where and in what they loop, and how likely the model finds
its end of sequence where the true middle ends.

Two parts, per cut kind of a case file (`fimlsp eval --dump-cases`):

- endings: from an `fimlsp eval` results file of the same cases (unconstrained mode, the model alone), how many
  middles ended by the model's end of sequence, by the token limit, or were cut as a loop (and after how many
  characters the loop was cut back to);
- loops: plain greedy middles of the model (no token healing), each stopped where it ends in a run of three
  equal chunks (`fimlsp.decoding.endings.loop_start`): where the run begins, what repeats (whole lines or a
  piece of one line) and whether the chunk is a copy of the right or the left context;
- the true end, teacher-forced: the model's FIM prompt of each case (as decoding builds it, no token healing)
  followed by the true middle, one forward pass; the end of sequence's probability and rank right after the true
  middle, against its probability at the middle's other positions and its rank-1 share there.

    python benchmarks/stopping.py --cases /work/eval/cases.jsonl [--model DIR] [--results EVAL.jsonl] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

import numpy as np

from fimlsp.decoding.endings import loop_start, repeated_chunk
from fimlsp.lines import LINE_BREAK

KINDS = ("boundary", "line", "node", "randspan")


def loop_shape(text: str, repeats: int = 3) -> dict | None:
    """The repeated run a middle ends in: where it begins (characters into the middle), its chunk and its shape."""
    chunk = repeated_chunk(text, repeats)
    if chunk is None:
        return None
    breaks = len(LINE_BREAK.findall(chunk))
    return {"start": loop_start(text, repeats), "chunk": chunk, "shape": "lines" if breaks else "in a line",
            "lines": breaks}


def endings(results: Path, kinds: dict[str, str], mode: str = "unconstrained") -> dict:
    """Per cut kind, from an eval results file: how the middles of `mode` ended, and where loops were cut."""
    table: dict[str, dict] = defaultdict(lambda: {"cases": 0, "eos": 0, "empty": 0, "length": 0, "loop": 0,
                                                  "loop_starts": [], "eos_tokens": []})
    for line in results.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("type") != "result" or record.get("mode") != mode or record.get("case") not in kinds:
            continue
        row = table[kinds[record["case"]]]
        row["cases"] += 1
        stop = record.get("stop", "")
        if stop == "eos":
            row["eos"] += 1
            row["eos_tokens"].append(record.get("generated_tokens", 0))
            row["empty"] += not record.get("middle")
        elif stop == "loop":
            row["loop"] += 1
            row["loop_starts"].append(len(record.get("middle", "")))  # cut back to the loop's first chunk
        else:
            row["length"] += 1
    return table


def greedy_loops(model, cases: list[dict], max_tokens: int = 128, repeats: int = 3) -> dict:
    """Per cut kind: plain greedy middles (no token healing, no loop cut), and the repeated run each ends in."""
    import torch

    table: dict[str, dict] = defaultdict(lambda: {"loops": 0, "starts": [], "chunks": [], "shapes": defaultdict(int),
                                                  "seen_in": defaultdict(int)})
    for case in cases:
        prompt = model.prompt(case["left"], case["right"], reserve=max_tokens)
        ids = torch.tensor([prompt])
        generated: list[int] = []
        cache = None
        text = ""
        with torch.no_grad():
            for _ in range(max_tokens):
                logits, cache = model.forward(ids, cache)
                token = int(logits[0, -1].argmax())
                if token in model.stop_ids:
                    break
                generated.append(token)
                ids = torch.tensor([[token]])
                text = model.tokenizer.decode(generated)
                if loop_start(text, repeats) is not None:
                    break
        shape = loop_shape(text, repeats)
        if shape:
            row = table[case["kind"]]
            row["loops"] += 1
            row["starts"].append(shape["start"])
            row["chunks"].append(shape["chunk"])
            row["shapes"][shape["shape"]] += 1
            chunk = shape["chunk"].strip()
            row["seen_in"]["right" if chunk in case["right"] else "left" if chunk in case["left"] else "neither"] += 1
    return table


def true_end(model, cases: list[dict], reserve: int = 128) -> dict:
    """Per cut kind: P(EOS) (any of the model's stop tokens) and its rank right after the true middle, and at the
    middle's other positions."""
    import torch

    stops = sorted(model.stop_ids)
    table: dict[str, dict] = defaultdict(lambda: {"end_p": [], "end_rank": [], "inside_p": [], "inside_top": 0,
                                                  "inside_count": 0})
    for case in cases:
        middle = model.encode(case["middle"])[:reserve]
        prompt = model.prompt(case["left"], case["right"], reserve=len(middle) + 1)
        ids = torch.tensor([prompt + middle])
        with torch.no_grad():
            logits = model.model(input_ids=ids).logits[0, len(prompt) - 1:].float()
        log_probs = torch.log_softmax(logits, dim=-1)
        eos_p = log_probs[:, stops].exp().sum(dim=-1).numpy()
        best_stop = log_probs[:, stops].max(dim=-1, keepdim=True).values
        ranks = (log_probs > best_stop).sum(dim=-1).numpy() + 1
        row = table[case["kind"]]
        row["end_p"].append(float(eos_p[-1]))
        row["end_rank"].append(int(ranks[-1]))
        row["inside_p"].extend(float(p) for p in eos_p[:-1])
        row["inside_top"] += int((ranks[:-1] == 1).sum())
        row["inside_count"] += len(middle)
    return table


def summary(end_table: dict, ending_table: dict | None, loop_table: dict) -> dict:
    out = {}
    for kind in KINDS:
        row: dict = {}
        if kind in end_table:
            t = end_table[kind]
            row |= {
                "cases": len(t["end_p"]),
                "eos_p_at_true_end_median": round(statistics.median(t["end_p"]), 4),
                "eos_p_at_true_end_mean": round(float(np.mean(t["end_p"])), 4),
                "eos_rank1_at_true_end": sum(r == 1 for r in t["end_rank"]),
                "eos_rank_at_true_end_median": statistics.median(t["end_rank"]),
                "eos_p_inside_middle_mean": round(float(np.mean(t["inside_p"])), 4) if t["inside_p"] else None,
                "eos_rank1_inside_middle": f"{t['inside_top']} of {t['inside_count']}",
            }
        if ending_table and kind in ending_table:
            e = ending_table[kind]
            row |= {
                "unconstrained": e["cases"], "ends_by_eos": e["eos"], "empty": e["empty"], "hit_token_limit": e["length"],
                "cut_as_loop": e["loop"],
                "loop_cut_after_chars_median": statistics.median(e["loop_starts"]) if e["loop_starts"] else None,
                "eos_tokens_median": statistics.median(e["eos_tokens"]) if e["eos_tokens"] else None,
            }
        if kind in loop_table:
            g = loop_table[kind]
            row |= {
                "greedy_loops": g["loops"],
                "greedy_loop_start_chars_median": statistics.median(g["starts"]) if g["starts"] else None,
                "greedy_loop_chunk_chars_median": statistics.median(map(len, g["chunks"])) if g["chunks"] else None,
                "greedy_loop_shapes": dict(g["shapes"]),
                "greedy_loop_chunk_seen_in_context": dict(g["seen_in"]),
                "greedy_loop_chunks": g["chunks"],
            }
        out[kind] = row
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=Path, required=True, help="case file (JSON lines of fimlsp eval --dump-cases)")
    parser.add_argument("--model", default=None, help="model folder (default: the shipped model)")
    parser.add_argument("--results", type=Path, default=None,
                        help="an fimlsp eval results file of these cases and this model, for the endings part")
    parser.add_argument("--max-tokens", type=int, default=128,
                        help="tokens of the plain greedy middles whose loops are described (0: none)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--json", type=Path, default=None, help="also write the summary here")
    args = parser.parse_args()

    import torch

    from fimlsp.model.loading import load_model

    torch.set_num_threads(args.threads)
    cases = [json.loads(line) for line in args.cases.read_text(encoding="utf-8").splitlines() if line.strip()]
    model = load_model(args.model, device="cpu")
    end_table = true_end(model, cases)
    ending_table = endings(args.results, {case["id"]: case["kind"] for case in cases}) if args.results else None
    loop_table = greedy_loops(model, cases, args.max_tokens) if args.max_tokens else {}
    result = summary(end_table, ending_table, loop_table)
    text = json.dumps(result, indent=1, ensure_ascii=False)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
