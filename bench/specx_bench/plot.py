"""results.png: elapsed time per mode normalized to `cold`, one group of bars per workload
(like the paper's Fig. 2), seconds above each bar; and the device validation's bars."""
import textwrap

from . import bars

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"cold": "#7f7f7f", "warm": "#2ca02c", "nospec": "#aec7e8", "specx": "#1f77b4"}


def elapsed_chart(workloads, path):
    """Grouped bars; min–max of the runs as error bars. Workloads without a baseline median
    are left out (nothing to normalize to)."""
    base = bars.baseline(workloads)
    shown = [w for w in workloads
             if any(r["mode"] == base and r["median_s"] for r in w["summary"])]
    if not shown:
        return False
    modes = [r["mode"] for r in shown[0]["summary"]]
    width = 0.8 / len(modes)
    fig, ax = plt.subplots(figsize=(max(4, 1.6 * len(shown) + 1), 3.6))
    for k, mode in enumerate(modes):
        for i, w in enumerate(shown):
            row = next((r for r in w["summary"] if r["mode"] == mode), None)
            ref = next(r["median_s"] for r in w["summary"] if r["mode"] == base)
            if not row or row["median_s"] is None:
                continue
            x = i + (k - (len(modes) - 1) / 2) * width
            y = row["median_s"] / ref
            err = [[y - row["min_s"] / ref], [row["max_s"] / ref - y]]
            ax.bar(x, y, width, color=COLORS.get(mode, f"C{k}"), yerr=err, capsize=2,
                   label=mode if i == 0 else None)
            ax.text(x, y + 0.03, f"{row['median_s']:.1f}s", ha="center", va="bottom",
                    fontsize=7, rotation=90 if len(modes) > 3 else 0)
    ax.set_xticks(range(len(shown)), [w["name"] for w in shown])
    ax.set_ylabel(f"elapsed time / {base}")
    ax.set_ylim(0, max(1.5, ax.get_ylim()[1] * 1.15))
    ax.axhline(1.0, color="black", linewidth=0.5)
    ax.legend(fontsize=8, ncol=len(modes))
    ax.set_title(f"specx bench: elapsed time normalized to {base}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def validation_chart(validation, path):
    """One small panel per check: the measured value (green when it meets its bar) over the
    band of values that meet it."""
    checks = validation["checks"]
    fig, axes = plt.subplots(1, len(checks), figsize=(2.3 * len(checks), 3))
    for ax, c in zip(axes, checks):
        top = max(c["measured"], c["high"] or 0, c["low"] or 0) * 1.3 or 1.0
        ax.axhspan(c["low"] if c["low"] is not None else min(0, c["measured"]),
                   c["high"] if c["high"] is not None else top, color="#2ca02c", alpha=0.15)
        ax.bar([0], [c["measured"]], color="#2ca02c" if c["passed"] else "#d62728")
        if "predicted" in c:
            ax.axhline(c["predicted"], color="black", linestyle="--", linewidth=1)
        ax.set_ylim(min(0, c["measured"] * 1.3), top)
        ax.set_xticks([0], [f"{c['measured']} {c['unit']}"])
        ax.set_title(f"{textwrap.fill(c['check'], 28)}\nbar: {c['bar']}", fontsize=7)
    fig.suptitle("slowfs device validation (shaded: values that meet the bar)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def refork_chart(workloads, path):
    """The paper's Tables 3 and 4 as two panels per run: mean refork time per attempt (basic
    against fast clones) and the program's minor faults (nospec, basic, fast). Returns False
    when no workload ran the refork modes."""
    from .report import refork_figures
    modes = ("nospec", "specx-basic", "specx-fast")
    shown = [(w, {m: refork_figures(w, m) for m in modes}) for w in workloads]
    shown = [(w, f) for w, f in shown if f["specx-basic"] or f["specx-fast"]]
    if not shown:
        return False
    fig, (left, right) = plt.subplots(1, 2, figsize=(max(6, 3 * len(shown) + 2), 3.4))
    colors = {"nospec": "#aec7e8", "specx-basic": "#ff7f0e", "specx-fast": "#1f77b4"}
    for k, mode in enumerate(modes):
        for i, (w, figures) in enumerate(shown):
            f = figures[mode]
            if not f:
                continue
            x = i + (k - 1) * 0.27
            if mode != "nospec" and f["mean_ms"] is not None:
                left.bar(x, f["mean_ms"], 0.27, color=colors[mode],
                         label=mode if i == 0 else None)
                left.text(x, f["mean_ms"], f"{f['mean_ms']:.2f}", ha="center", va="bottom",
                          fontsize=7)
            right.bar(x, f["minflt"], 0.27, color=colors[mode], label=mode if i == 0 else None)
    names = [w["name"] for w, _ in shown]
    left.set_xticks(range(len(shown)), names)
    left.set_ylabel("ms per refork (kill + clone)")
    left.set_title("Refork time (cf. Table 3)", fontsize=9)
    left.legend(fontsize=7)
    right.set_xticks(range(len(shown)), names)
    right.set_ylabel("minor faults of the program")
    right.set_title("Copy-on-write faults (cf. Table 4)", fontsize=9)
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True
