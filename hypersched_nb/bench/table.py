"""The benchmark's table: mean ± sd of the best metric per policy × deadline, plain text."""

from __future__ import annotations

import math
from statistics import fmean, stdev

__all__ = ["fmt", "format_table"]


def fmt(x: float | None) -> str:
    """A metric in a width that suits its size: 0.9464, 12.35, 1.234e+04."""
    if x is None or not math.isfinite(x):
        return "n/a"
    if x != 0 and (abs(x) >= 1000 or abs(x) < 0.001):
        return f"{x:.3e}"
    return f"{x:.2f}" if abs(x) >= 10 else f"{x:.4f}"


def _mean_sd(values: list[float | None]) -> str:
    got = [v for v in values if v is not None]
    if not got:
        return "n/a"
    sd = stdev(got) if len(got) > 1 else 0.0
    cell = f"{fmt(fmean(got))} ± {fmt(sd)}"
    return cell if len(got) == len(values) else f"{cell} [{len(got)}/{len(values)}]"


def _grid(title: str, header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([title, line(header), rule, *map(line, rows)])


def format_table(runs: list[dict], plan) -> str:
    """Best metric by each deadline (mean ± sd over seeds), trials started, the oracle and,
    with a target, the time to reach it. ``plan`` is the benchmark's :class:`Plan`."""
    trace, s = plan.trace, plan.settings
    by = {}
    for row in runs:
        by.setdefault((row["policy"], row["deadline"]), []).append(row)
    deadlines = [d for d in plan.deadlines if any(k[1] == d for k in by)]
    policies = [p for p in plan.policies if any(k[0] == p for k in by)]
    R = s.max_epochs or trace.longest
    scaling = trace.scaling if s.scaling is None else s.scaling
    startup = trace.startup_seconds if s.startup is None else s.startup
    curve = " ".join(f"s({k})={v:g}" for k, v in scaling.as_dict().items() if k > 1) or "none"
    seeds = "seed 0" if plan.seeds == 1 else f"seeds 0-{plan.seeds - 1}"
    head = (
        f"{trace.name}: {s.workers} workers, {s.configs} configs, R={R} r={s.min_epochs} "
        f"eta={s.eta:g}, startup {startup:g} s, scaling {curve}, {seeds}"
    )
    better = "higher" if trace.mode == "max" else "lower"
    header = ["policy"] + [f"{d:g} s" for d in deadlines]
    best = [[p] + [_best_cell(by.get((p, d), [])) for d in deadlines] for p in policies]
    oracle = [["oracle"] + [_mean_sd([r["oracle"] for r in _any(by, d)]) for d in deadlines]]
    parts = [
        head,
        "",
        _grid(
            f"best {trace.metric_name} by the deadline ({better} is better): "
            "mean ± sd over seeds (trials started, mean)",
            header,
            best + oracle,
        ),
    ]
    if s.target is not None:
        ttt = [[p] + [_ttt_cell(by.get((p, d), [])) for d in deadlines] for p in policies]
        title = f"time to reach {s.target:g}: mean s over the seeds that reached it (reached/seeds)"
        parts += ["", _grid(title, header, ttt)]
    told = [
        p
        for p in policies
        if any(r["early_signal_at_end"] for d in deadlines for r in by.get((p, d), []))
    ]
    if told:
        trusting = [[p] + [_trust_cell(by.get((p, d), [])) for d in deadlines] for p in told]
        title = (
            f"runs that ended trusting the first epochs (early_signal={s.early_signal!r}; "
            "the rest still doubted them)"
        )
        parts += ["", _grid(title, header, trusting)]
    return "\n".join(parts)


def _any(by: dict, deadline: float) -> list[dict]:
    """The runs of one policy at ``deadline`` (the oracle is the same for every policy)."""
    for (_, d), rows in by.items():
        if d == deadline:
            return rows
    return []


def _best_cell(rows: list[dict]) -> str:
    if not rows:
        return "-"
    started = fmean(r["trials_started"] for r in rows)
    return f"{_mean_sd([r['best'] for r in rows])} ({started:.1f})"


def _trust_cell(rows: list[dict]) -> str:
    if not rows:
        return "-"
    return f"{sum(r['early_signal_at_end'] == 'trust' for r in rows)}/{len(rows)}"


def _ttt_cell(rows: list[dict]) -> str:
    if not rows:
        return "-"
    got = [r["time_to_target"] for r in rows if r["time_to_target"] is not None]
    mean = f"{fmean(got):.0f} s" if got else "never"
    return f"{mean} ({len(got)}/{len(rows)})"
