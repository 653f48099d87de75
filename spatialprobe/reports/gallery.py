"""An HTML gallery of a judged run: each image with its boxes drawn, the depths, the rule's
explanation and whether the answer matched gold. Self-contained (thumbnails as data URIs)."""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import Any

from spatialprobe.errors import UsageError
from spatialprobe.extras import require
from spatialprobe.files import atomic_write_text, read_json, read_jsonl

COLOURS = {"a": (229, 57, 53), "b": (30, 136, 229)}


def annotated_thumbnail(path: Path, row: dict[str, Any], max_side: int = 256) -> str:
    """The image with box A (red) and box B (blue) drawn, as a JPEG data URI."""
    Image = require("PIL.Image", "judge", "The judge gallery")
    ImageDraw = require("PIL.ImageDraw", "judge", "The judge gallery")
    from spatialprobe.vision import open_image

    image = open_image(path)  # a damaged file: one sentence naming it
    scale = min(1.0, max_side / max(image.size)) if max(image.size) > max_side else max(1.0, 128 / max(image.size))
    image = image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))),
                         Image.Resampling.NEAREST)
    draw = ImageDraw.Draw(image)
    for key in ("a", "b"):
        box = row.get(f"box_{key}")
        if box:
            draw.rectangle([v * scale for v in box], outline=COLOURS[key], width=2)
            draw.text((box[0] * scale + 2, box[1] * scale + 1), row[f"obj_{key}"], fill=COLOURS[key])
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=85)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode()


def _card(row: dict[str, Any], source: Path) -> str:
    ok = row["pred"] == row["gold"]
    depth = ""
    if row.get("depth_a") is not None:
        depth = f"<br>depth A {row['depth_a']:.3g}, depth B {row['depth_b']:.3g}"
    guessed = "" if row["recognized"] else " (random guess: not recognized)"
    return (
        f'<figure class="{"ok" if ok else "bad"}"><img src="{annotated_thumbnail(source / row["image"], row)}">'
        f"<figcaption><b>{html.escape(row['instance_id'])}#{row['image_index']}</b>: "
        f"<span style='color:#e53935'>{html.escape(row['obj_a'])}</span> vs "
        f"<span style='color:#1e88e5'>{html.escape(row['obj_b'])}</span><br>"
        f"gold <b>{html.escape(row['gold'])}</b>, answer <b>{html.escape(str(row['pred']))}</b>{guessed} "
        f"{'&#10003;' if ok else '&#10007;'}{depth}<br><small>{html.escape(row.get('explanation', ''))}</small>"
        "</figcaption></figure>")


def write_gallery(judged: str | Path, out: str | Path | None = None) -> Path:
    """Write ``JUDGED/gallery.html`` (or ``out``) for a run written by ``spatialprobe judge``."""
    run = Path(judged)  # read only: never create a directory that is not there
    config = read_json(run / "config.json") if (run / "config.json").is_file() else None
    if config is None or config.get("kind") != "judge" or not (run / "summary.json").exists():
        raise UsageError(f"{judged} is not a judge run (no config.json of kind 'judge' with a "
                         "summary.json beside it).")
    summary = read_json(run / "summary.json")
    rows = read_jsonl(run / "predictions.jsonl")
    source = Path(config["settings"]["source"]["path"])
    details, metrics = summary["details"], summary["metrics"]
    cards = "\n".join(_card(r, source) for r in rows)
    page = f"""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<title>ISM (Box) gallery: {html.escape(summary['task'])}</title>
<style>body{{font-family:system-ui,sans-serif;margin:16px}} figure{{display:inline-block;width:270px;
vertical-align:top;margin:6px;padding:6px;border:3px solid #ccc;border-radius:6px}} figure.ok{{border-color:#43a047}}
figure.bad{{border-color:#e53935}} img{{max-width:256px;image-rendering:pixelated}} figcaption{{font-size:13px}}</style>
</head><body><h1>ISM (Box) gallery: {html.escape(summary['task'])} - {html.escape(summary['model'])}</h1>
<p>Accuracy {_pct(metrics['accuracy'])} (whole set), {_pct(metrics['recognized_accuracy'])}
on the recognized subset; recognized {_pct(metrics['recognized_ratio'])} of {metrics['accuracy']['n']} images.
Box A red, box B blue. Detector: {html.escape(str(details.get('detector')))};
depth: {html.escape(str(details.get('depth')))}; rule: {html.escape(str(details.get('rule')))}
{html.escape(str(details.get('rule_args') or ''))}.</p>
{cards}
</body></html>
"""
    path = Path(out) if out else run / "gallery.html"
    atomic_write_text(path, page)
    return path


def _pct(metric: dict[str, Any]) -> str:
    return "–" if metric.get("mean") is None else f"{metric['mean']:.1f}%"
