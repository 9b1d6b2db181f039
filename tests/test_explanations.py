"""A verdict in words (``present/explanations.py``): the explanation of an estimate is made
from its terms and its deciding precision; a measured or LLM verdict keeps its own words."""

from __future__ import annotations

from roofline_lsp.model.terms import (
    AssumptionTerm,
    LoopTerm,
    MemoryTerm,
    NoteTerm,
    TypeTerm,
    WorkTerm,
)
from roofline_lsp.model.verdict import Verdict
from roofline_lsp.present.explanations import card_assumptions, explanation, term_text

TERMS = (
    WorkTerm("thread", (("fp32", 2.0),), 6.0),
    LoopTerm("j", 17, 32768, "argument", ((("fp32", 19.0),), 4.0, 16.0)),
    LoopTerm(None, 30, 8, "constant"),
    MemoryTerm(12_582_912, False, 6_291_456, 12_582_912, 12_582_912),
    NoteTerm("counts: PTX"),
)


def verdict(**kw: object) -> Verdict:
    base: dict[str, object] = dict(
        kernel="k",
        gpu="RTX-3080",
        bound="bandwidth",
        source="static",
        confidence=0.8,
        ai={"fp64": None, "fp32": 0.165, "fp16": None, "int": 0.5},
        ridge={"fp64": 0.5152, "fp32": 32.971, "fp16": 32.971, "int": 16.485},
        deciding="int",
        terms=TERMS,
    )
    base.update(kw)
    return Verdict(**base)  # type: ignore[arg-type]


def test_memory_term_never_reads_as_more_dram_than_referenced() -> None:
    streaming = MemoryTerm(134e6, False, 52.4e6, 202e6, 201e6)
    assert term_text(streaming).endswith("every byte referenced comes from DRAM (202 MB)")
    reused = MemoryTerm(16.8e6, True, 52.4e6, 12.6e6, 554e6)
    assert term_text(reused).endswith("12.6 MB of the 554 MB referenced come from DRAM")
    # searches' probes missing L2 move a sector for each 4 B referenced: more than referenced
    searched = MemoryTerm(201e6, False, 5.24e6, 2.77e9, 1.74e9, search_bytes=2.57e9)
    assert term_text(searched).endswith(
        "2.77 GB of DRAM for the 1.74 GB referenced, 2.57 GB of them binary-search probes"
        " that miss L2 (a sector each)"
    )


def test_memory_term_names_the_code_and_the_display_when_they_weigh() -> None:
    # a small kernel whose 110 kB of code is most of what it reads from DRAM, running 140 ms
    # on a GPU whose display reads 20 MB a refresh: 8 frames
    spin = MemoryTerm(1e3, True, 5.24e6, 115e3, 1e3, code_bytes=110e3)
    shown = MemoryTerm(
        1e3, True, 5.24e6, 115e3, 1e3, code_bytes=110e3, display_bytes=160e6, seconds=0.14
    )
    assert term_text(spin).endswith(
        "every byte referenced comes from DRAM (115 kB, 110 kB of them its code)"
    )
    assert term_text(shown) == (
        term_text(spin) + "; + 160 MB the display reads during the launch's ~140 ms"
        " (counted by the profiler)"
    )
    # code that is a sliver of the traffic is not named
    saxpy = MemoryTerm(131e3, True, 5.24e6, 168e3, 197e3, code_bytes=320)
    assert "code" not in term_text(saxpy)


def test_memory_term_names_the_share_of_l2_the_stencil_layers_overflow() -> None:
    # 2.14 GB of 3.99 GB are layers read again; the text names the share the model used
    stencil = MemoryTerm(470e6, False, 5.24e6, 3.99e9, 4.53e9, layer_bytes=2.14e9)
    assert term_text(stencil).endswith(
        "3.99 GB of the 4.53 GB referenced come from DRAM, 2.14 GB of them stencil layers read"
        " again (the layers between two uses of an element overflow half of L2)"
    )
    quarter = MemoryTerm(470e6, False, 5.24e6, 3.99e9, 4.53e9, layer_bytes=2.14e9, layer_share=0.25)
    assert term_text(quarter).endswith("overflow a quarter of L2)")
    tenth = MemoryTerm(470e6, False, 5.24e6, 3.99e9, 4.53e9, layer_bytes=2.14e9, layer_share=0.1)
    assert term_text(tenth).endswith("overflow 10% of L2)")


def test_each_term_in_words() -> None:
    assert [term_text(t) for t in TERMS] == [
        "per thread: 2 FP32 FLOP, 6 integer ops",
        "loop over j (line 17, 32768 trips, argument): 19 FP32 FLOP, 4 int ops and 16 B "
        "referenced per iteration",
        "loop (line 30, 8 trips, constant)",
        "working set 12.6 MB exceeds L2 (6.29 MB); every byte referenced comes from DRAM (12.6 MB)",
        "counts: PTX",
    ]


def test_an_estimate_is_explained_by_its_deciding_precision_then_its_terms() -> None:
    # bandwidth-bound with float work: every AI below its ridge, the fp32 one shown
    # (0.165 against 32.971: below by 200x), not the integer one closest to its ridge
    text = explanation(verdict())
    assert text.startswith(
        "bandwidth-bound: every AI below its ridge; fp32 AI 0.165 vs ridge 33 (below by 200x); "
        "per thread:"
    )
    # no float work: the integer intensity (0.5 against 16.485: below by 33x)
    only_int = verdict(ai={"fp64": None, "fp32": None, "fp16": None, "int": 0.5})
    assert explanation(only_int).startswith(
        "bandwidth-bound: int AI 0.5 vs ridge 16.5 (below by 33x);"
    )
    # compute-bound on integer work: the integer intensity decides and is named
    hashing = verdict(bound="compute", ai={"fp64": None, "fp32": 0.165, "fp16": None, "int": 20.0})
    assert explanation(hashing).startswith(
        "compute-bound: int AI 20 vs ridge 16.5 (above by 1.2x);"
    )
    assert text.endswith("; counts: PTX")
    assert explanation(verdict(deciding=None, terms=(NoteTerm("x"),))) == (
        "bandwidth-bound: no arithmetic found; x"
    )


def test_measured_and_llm_verdicts_keep_their_own_words() -> None:
    assert explanation(verdict(source="llm", rationale="streams x once")) == "streams x once"
    assert explanation(verdict(source="profile", rationale="measured")) == "measured"
    assert explanation(verdict(rationale="kernel too deeply nested to analyse")) == (
        "kernel too deeply nested to analyse"
    )


def test_what_was_assumed_in_words_with_the_hint_that_settles_it() -> None:
    assert [
        term_text(t)
        for t in (
            AssumptionTerm("launch", 1_048_576, "unknown values", ("n", "bs")),
            AssumptionTerm("launch", 1_048_576, "no launch"),
            AssumptionTerm("trips", 16, "unknown values", ("m",), 12, "j", 0.9),
            AssumptionTerm("trips", 16, "unknown values", (), 14, "k", 0.5),
            AssumptionTerm("trips", 16, "data", (), 20, "e", 0.3),
            AssumptionTerm("trips", 16, "while", (), 25, None, 0.1),
            AssumptionTerm("trips", 16, "input", ("m",), 30, "j", 0.2, ("rows", "cols")),
            AssumptionTerm("launch", 4096, "input", ("n",), read=("n",)),
        )
    ] == [
        "launch size unknown: assumed 1.05 M threads; add `// roofline: n=..., bs=...`",
        "no launch found: assumed 1.05 M threads",
        "loop over j (line 12): trip count unknown, assumed 16; add `// roofline: m=...`",
        "loop over k (line 14): trip count unknown, assumed 16; add `// roofline: trips=...`"
        " above it",
        "loop over e (line 20): bound read from memory, assumed 16; add `// roofline: trips=...`"
        " above it",
        "loop (line 25): no counted bound, assumed 16; add `// roofline: trips=...` above it",
        "loop over j (line 30): trip count unknown (rows, cols set at run time), assumed 16;"
        " add `// roofline: m=...`",
        "launch size unknown (n set at run time): assumed 4.1 k threads; add `// roofline: n=...`",
    ]


def test_a_hover_card_names_the_first_assumption_and_a_template_type() -> None:
    launch = AssumptionTerm("launch", 1 << 20, "no launch", ("n",))
    loop = AssumptionTerm("trips", 16, "unknown values", ("m",), line=12, var="j")
    typed = TypeTerm("T", "float")
    shown = card_assumptions(verdict(terms=(*TERMS, launch, loop, typed)))
    assert shown == (term_text(launch), term_text(typed))
    assert card_assumptions(verdict(terms=(typed, launch))) == (term_text(typed),)
    assert card_assumptions(verdict(terms=(launch, loop))) == (term_text(launch),)
