"""Fill-in-the-middle decoding: constrained, checked and unconstrained (Sec. VII-B of the FIM quotient paper).

The three modes share one loop (`loop`) and differ only in their `Judge` (`judges`): which candidate tokens it
accepts and where it lets the middle end. In the `constrained` mode a candidate is taken only if the quotient
recognizer can still complete the file after it, trying the model's candidates in order (the top `top_k`, then the
rest of the vocabulary), and the middle always ends valid within the token limit (`steering`).

How a completion ended is in `Completion.ending`: `eos` (the model's own end of sequence), `finish` (a steered
finish), `line` (cut at the end of the first line where the file is valid, in single-line mode), `statement`
(cut where the statement or block that holds the cursor ends, with `statement_end`, constrained), `right` (the
model went on to write the rest of the cursor's line again, `)` before `)`, and the middle before it is a valid
end: constrained and checked) (`endings`), `fallback` (generation stopped early: `fallback`) or `none`.

A completion decodes `attempts` middles from one forward pass over the prompt and returns first the one that ended
best (`preference`): valid, then ended by the model or where it was asked to end before cut back by a fallback,
then by the model's mean log-probability per token with the token that ended the middle (a sum would prefer the
shortest: `pass` over `return total / len(values)`) (`attempts`).

The prompt is token-healed (`prefix`). Whitespace taken back (an indentation, the space after `return `) is the
user's: the first tokens write it again and then code, not more whitespace.

The constrained mode's promise comes from the language's `constrain` (`fimlsp.language`): the whole file, or the
statements around the cursor when the file is broken elsewhere or bigger than the budget (`guarantee` and `region`
say which). When not even those admit a middle, or the setup runs past its time, it decodes unconstrained and
marks the result unchecked unless the language's parser accepts the file with it. A middle is shown (`shown`) only
if it passed its mode's check: never one that may break a file that is valid but for the middle.

The package talks only to the model interface (`fimlsp.model.FimModel`) and to the `Language`.

The names below are loaded from their modules on first use: `fimlsp.decoding.options` alone (the settings' types)
does not import the decoder, numpy or the model layer, so that `fimlsp serve` answers `initialize` before they load.
"""

from fimlsp.lazy_names import loader

_HOMES = {"complete_middle": "attempts", "complete_middles": "attempts", "loop_start": "endings",
          "MODES": "options", "NAMES": "options", "SCOPES": "options", "DecodingOptions": "options",
          "Completion": "results", "preference": "results", "shown": "results"}

__all__ = sorted(_HOMES)

__getattr__ = loader(__name__, _HOMES)
