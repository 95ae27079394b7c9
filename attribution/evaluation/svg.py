"""Tiny dependency-free SVG charts for the evaluation report (works offline).

Example:
    >>> svg = line_chart("t", [Series("a", [0.1, 0.2], [0.9, 0.8])], x_label="alpha", y_label="cov")
    >>> svg.startswith("<svg") and "</svg>" in svg
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#7f7f7f")
WIDTH, HEIGHT = 560, 340
LEFT, RIGHT, TOP, BOTTOM = 60, 170, 40, 50


@dataclass
class Series:
    name: str
    x: Sequence[float]
    y: Sequence[float]
    low: Sequence[float] = field(default_factory=list)
    high: Sequence[float] = field(default_factory=list)
    dashed: bool = False


def _scale(value: float, lo: float, hi: float, start: float, end: float) -> float:
    if hi == lo:
        return (start + end) / 2
    return start + (value - lo) * (end - start) / (hi - lo)


def _frame(title: str, x_label: str, y_label: str, extra_height: int = 0) -> list[str]:
    total = HEIGHT + extra_height
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{total}" '
        f'viewBox="0 0 {WIDTH} {total}" font-family="sans-serif" font-size="11">',
        f'<rect width="{WIDTH}" height="{total}" fill="white"/>',
        f'<text x="{WIDTH / 2 - RIGHT / 2}" y="20" text-anchor="middle" font-size="13">{escape(title)}</text>',
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2}" y="{HEIGHT - 10}" text-anchor="middle">{escape(x_label)}</text>',
        f'<text x="14" y="{(TOP + HEIGHT - BOTTOM) / 2}" text-anchor="middle" '
        f'transform="rotate(-90 14 {(TOP + HEIGHT - BOTTOM) / 2})">{escape(y_label)}</text>',
    ]


def _y_axis(lines: list[str], y_min: float, y_max: float) -> None:
    plot_right = WIDTH - RIGHT
    for k in range(6):
        value = y_min + k * (y_max - y_min) / 5
        y = _scale(value, y_min, y_max, HEIGHT - BOTTOM, TOP)
        lines.append(
            f'<line x1="{LEFT}" x2="{plot_right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
        )
        lines.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{value:.2f}</text>')


def _legend(lines: list[str], names: Sequence[str]) -> None:
    for k, name in enumerate(names):
        y = TOP + 16 * k
        colour = PALETTE[k % len(PALETTE)]
        lines.append(
            f'<rect x="{WIDTH - RIGHT + 12}" y="{y - 8}" width="10" height="10" fill="{colour}"/>'
        )
        lines.append(f'<text x="{WIDTH - RIGHT + 26}" y="{y + 1}">{escape(name)}</text>')


def line_chart(
    title: str,
    series: Sequence[Series],
    *,
    x_label: str,
    y_label: str,
    y_range: tuple[float, float] | None = None,
) -> str:
    """Lines with optional error bars (low/high) per point."""
    xs = [x for s in series for x in s.x]
    ys = [y for s in series for y in list(s.y) + list(s.low) + list(s.high)]
    x_min, x_max = min(xs), max(xs)
    y_min, y_max = y_range if y_range else (min(ys), max(ys))
    lines = _frame(title, x_label, y_label)
    _y_axis(lines, y_min, y_max)
    for x in sorted(set(xs)):
        px = _scale(x, x_min, x_max, LEFT + 10, WIDTH - RIGHT - 10)
        lines.append(
            f'<text x="{px:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">{x:g}</text>'
        )
    for k, s in enumerate(series):
        colour = PALETTE[k % len(PALETTE)]
        points = [
            (
                _scale(x, x_min, x_max, LEFT + 10, WIDTH - RIGHT - 10),
                _scale(y, y_min, y_max, HEIGHT - BOTTOM, TOP),
            )
            for x, y in zip(s.x, s.y, strict=True)
        ]
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
        dash = ' stroke-dasharray="5,4"' if s.dashed else ""
        lines.append(
            f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>'
        )
        lows: list[float | None] = list(s.low) if s.low else [None] * len(points)
        highs: list[float | None] = list(s.high) if s.high else [None] * len(points)
        for (px, py), low, high in zip(points, lows, highs, strict=True):
            lines.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{colour}"/>')
            if low is not None and high is not None:
                y_low = _scale(low, y_min, y_max, HEIGHT - BOTTOM, TOP)
                y_high = _scale(high, y_min, y_max, HEIGHT - BOTTOM, TOP)
                lines.append(
                    f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{y_low:.1f}" y2="{y_high:.1f}" stroke="{colour}"/>'
                )
    _legend(lines, [s.name for s in series])
    lines.append("</svg>")
    return "\n".join(lines)


def bar_chart(
    title: str,
    labels: Sequence[str],
    values: Sequence[float],
    *,
    y_label: str,
    highlight: Sequence[bool] = (),
) -> str:
    """Vertical bars, one per label; highlighted bars are drawn in the first colour."""
    y_max = max(list(values) + [1.0]) * 1.1
    # Room under the plot for the slanted labels.
    lines = _frame(title, "", y_label, extra_height=110)
    _y_axis(lines, 0.0, y_max)
    width = (WIDTH - RIGHT - LEFT) / max(len(labels), 1)
    for k, (label, value) in enumerate(zip(labels, values, strict=True)):
        x = LEFT + k * width + width * 0.15
        top = _scale(value, 0.0, y_max, HEIGHT - BOTTOM, TOP)
        colour = PALETTE[0] if (highlight and highlight[k]) else PALETTE[6]
        lines.append(
            f'<rect x="{x:.1f}" y="{top:.1f}" width="{width * 0.7:.1f}" height="{HEIGHT - BOTTOM - top:.1f}" fill="{colour}"/>'
        )
        lines.append(
            f'<text x="{x + width * 0.35:.1f}" y="{top - 3:.1f}" text-anchor="middle">{value:.1f}</text>'
        )
        lines.append(
            f'<text x="{x + width * 0.35:.1f}" y="{HEIGHT - BOTTOM + 12}" text-anchor="end" '
            f'transform="rotate(-30 {x + width * 0.35:.1f} {HEIGHT - BOTTOM + 12})" font-size="9">{escape(label)}</text>'
        )
    lines.append("</svg>")
    return "\n".join(lines)
