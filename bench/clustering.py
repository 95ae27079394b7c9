"""Misbehaviour clustering benchmark: quality on the demo data, then scale.

Run from the repository root (``make bench`` runs it with the others)::

    .venv/bin/python bench/clustering.py                  # everything, ~10 min on 2 cores
    .venv/bin/python bench/clustering.py --sizes 10000    # a quick scale check

Writes ``bench-results/clustering.json``; ``docs/clustering.md`` reports its figures.

1. Demo quality: the wrong steps of Who&When (labelled decisive steps) and tau-bench
   airline (tool calls that drew an error), and, with the all-failed-steps switch, every
   agent action of their failed rollouts: misbehaviours found, share of wrong steps in
   the top 8, silhouette and DBCV (``hdbscan.validity_index``) on a 2,000-point sample,
   and each misbehaviour's name and exemplars, for reading.
2. Scale: 10k, 30k and 100k wrong steps made from the real agent actions (each copy gets
   its numbers and ids redrawn, a tenth of its words dropped, and an environment, task
   and policy model of its own), each size in a fresh process so the peak memory is its
   own: time per stage, peak RSS, ``hdbscan`` against ``sklearn.cluster.HDBSCAN`` on the
   same reduced vectors, and the assignment of 1,000 new steps to the fitted model.
3. HDBSCAN without the PCA step, on the 128-dimensional TF-IDF vectors of 5k steps.
4. The MiniLM (ONNX int8) embedder's speed on real step texts and its clusters on the
   demo wrong steps, when it is installed (``--minilm-only`` runs just this part, for an
   evaluation venv: see docs/clustering.md).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from bench.common import SHARED_DATA, machine, peak_rss_mb  # noqa: E402

RESULTS = REPO_ROOT / "bench-results" / "clustering.json"
DEFAULT_SIZES = (10_000, 30_000, 100_000)
ASSIGN_STEPS = 1_000
HIGH_DIM_STEPS = 5_000
ENVIRONMENTS = 12
MODELS = ("gpt-4o", "claude-3-5-sonnet", "llama-3.1-70b", "qwen2.5-72b")
EXEMPLAR_CHARS = 180
_DIGITS = re.compile(r"\d")


def demo_sets(data_dir: Path) -> dict[str, Any]:
    from analysis.core.demo import load_demo

    labelled = load_demo(data_dir)
    everything = load_demo(data_dir, all_failed_steps=True)
    sets = {}
    for mode, demo in (("wrong steps", labelled), ("all failed steps", everything)):
        for dataset in ("who_and_when", "tau_bench"):
            keep = {key for key, name in demo.dataset_of.items() if name == dataset}
            sets[(dataset, mode)] = (
                [s for s in demo.wrong if s.rollout in keep],
                [s for s in demo.success if s.rollout in keep],
                {k: v for k, v in demo.rollout_failed.items() if k in keep},
            )
    # Both data sets in one project, as `make run` loads them.
    sets[("both", "wrong steps")] = (labelled.wrong, labelled.success, labelled.rollout_failed)
    return sets


def quality(data_dir: Path, backend: str) -> list[dict[str, Any]]:
    from analysis.core.pipeline import cluster_wrong_steps
    from analysis.core.steps import action_text

    reports = []
    for (dataset, mode), (wrong, success, failed) in demo_sets(data_dir).items():
        started = time.perf_counter()
        outcome = cluster_wrong_steps(
            wrong, backend=backend, seed=0, success_steps=success, rollout_failed=failed
        )
        elapsed = time.perf_counter() - started
        by_key = {step.key: step for step in outcome.steps}
        table = []
        for profile in sorted(outcome.profiles.values(), key=lambda p: (-p.share, p.label)):
            table.append(
                {
                    "name": profile.name,
                    "size": profile.size,
                    "share": round(profile.share, 4),
                    "pattern_share": profile.pattern_share,
                    "environments": profile.environments,
                    "tasks": profile.tasks,
                    "generalises": profile.generalises,
                    "lift": profile.lift,
                    "exemplars": [
                        f"{key} :: {action_text(by_key[key])[:EXEMPLAR_CHARS]}"
                        for key in profile.exemplars[:3]
                    ],
                }
            )
        metrics = {
            k: (round(v, 4) if isinstance(v, float) else v) for k, v in outcome.metrics.items()
        }
        reports.append(
            {
                "backend": backend,
                "dataset": dataset,
                "mode": mode,
                "seconds": round(elapsed, 2),
                "params": outcome.model.params.as_dict(),
                **metrics,
                "misbehaviours": table,
            }
        )
        print(
            f"{backend:9s} {dataset:13s} {mode:16s} steps={metrics['steps']:5d} clusters={metrics['clusters']:3d} "
            f"capped={metrics['capped']} "
            f"top8={metrics['top8_share']:.3f} noise={metrics['noise_share']:.3f} "
            f"silhouette={metrics.get('silhouette')} dbcv={metrics.get('dbcv')}",
            flush=True,
        )
    return reports


def scaled_steps(data_dir: Path, count: int, *, seed: int, prefix: str = "s") -> list[Any]:
    """``count`` wrong steps made from the real agent actions of the demo rollouts."""
    import dataclasses

    from analysis.core.demo import load_demo

    templates = load_demo(data_dir, all_failed_steps=True).wrong
    rng = random.Random(seed)
    made = []
    for number in range(count):
        template = templates[rng.randrange(len(templates))]

        def redraw(text: str) -> str:
            words = [w for w in _DIGITS.sub(lambda _: str(rng.randrange(10)), text).split(" ")]
            return " ".join(w for w in words if rng.random() > 0.1)

        environment = rng.randrange(ENVIRONMENTS)
        made.append(
            dataclasses.replace(
                template,
                key=f"{prefix}{number:07d}",
                rollout=f"{prefix}r{number // 8}",
                content=redraw(template.content),
                before=redraw(template.before),
                after=redraw(template.after),
                environment=f"{template.environment or 'env'}-{environment}",
                task=f"{template.task}-{rng.randrange(40)}",
                policy_model=MODELS[rng.randrange(len(MODELS))],
            )
        )
    return made


def one_size(data_dir: Path, size: int, *, backend: str, with_sklearn: bool) -> dict[str, Any]:
    """Run in a fresh process: cluster ``size`` steps, compare libraries, assign 1,000."""
    import numpy as np
    from sklearn.metrics import adjusted_rand_score

    from analysis.core.embeddings import MemoryCache
    from analysis.core.pipeline import assign_wrong_steps, cluster_wrong_steps

    steps = scaled_steps(data_dir, size, seed=size)
    new_steps = scaled_steps(data_dir, ASSIGN_STEPS, seed=size + 1, prefix="n")
    rss_before = peak_rss_mb()
    cache = MemoryCache()
    started = time.perf_counter()
    outcome = cluster_wrong_steps(steps, backend=backend, seed=0, cache=cache)
    total = time.perf_counter() - started
    report: dict[str, Any] = {
        "backend": backend,
        "steps": size,
        "end_to_end_s": round(total, 2),
        "peak_rss_mb_after_clustering": round(peak_rss_mb(), 1),
        "peak_rss_mb_before": round(rss_before, 1),
        **{k: (round(v, 4) if isinstance(v, float) else v) for k, v in outcome.metrics.items()},
        "params": outcome.model.params.as_dict(),
    }
    started = time.perf_counter()
    labels, _, _ = assign_wrong_steps(outcome.model, new_steps, cache=cache)
    report["assign_1000_s"] = round(time.perf_counter() - started, 3)
    report["assign_1000_noise_share"] = round(float(np.mean(labels == -1)), 4)
    print(
        f"  {backend} {size}: end to end {total:.1f}s, assign 1k {report['assign_1000_s']}s",
        flush=True,
    )

    if with_sklearn:
        from sklearn.cluster import HDBSCAN as SklearnHDBSCAN

        reduced = outcome.model.reducer.transform(_pipeline_vectors(outcome, cache))
        params = outcome.model.params
        started = time.perf_counter()
        theirs = SklearnHDBSCAN(
            min_cluster_size=params.min_cluster_size,
            min_samples=params.min_samples,
            cluster_selection_method=params.cluster_selection_method,
            max_cluster_size=int(params.max_cluster_share * size) if report["capped"] else None,
        ).fit(reduced)
        report["sklearn_hdbscan_s"] = round(time.perf_counter() - started, 2)
        report["sklearn_clusters"] = int(theirs.labels_.max() + 1)
        report["sklearn_vs_hdbscan_ari"] = round(
            float(adjusted_rand_score(outcome.labels, theirs.labels_)), 4
        )
        print(f"  {size}: sklearn HDBSCAN {report['sklearn_hdbscan_s']}s", flush=True)
    report["peak_rss_mb"] = round(peak_rss_mb(), 1)
    return report


def _pipeline_vectors(outcome: Any, cache: Any) -> Any:
    """The vectors the pipeline reduced, rebuilt from the cache: the text each step was
    embedded as (the behaviour representation's, else the plain one) and, with the
    behaviour pipeline, the signal and structural blocks joined as it joined them."""
    import numpy as np

    from analysis.core.embeddings import text_key
    from analysis.core.steps import step_text

    representer = outcome.model.representer
    texts = [representer.text(s) if representer else step_text(s) for s in outcome.steps]
    namespace = outcome.model.embedder.namespace
    vectors = np.vstack([cache.store[(namespace, text_key(text))] for text in texts])
    return representer.combine(vectors, outcome.steps) if representer is not None else vectors


def high_dimensional_one(data_dir: Path, variant: str) -> dict[str, Any]:
    """Run in a fresh process: HDBSCAN on 5k steps' 256-d vectors, raw or after PCA."""
    import hdbscan

    from analysis.core.cluster import Reducer, params_for_size
    from analysis.core.embeddings import WordLlamaEmbedder
    from analysis.core.steps import step_text

    texts = [step_text(s) for s in scaled_steps(data_dir, HIGH_DIM_STEPS, seed=7)]
    vectors = WordLlamaEmbedder().transform(texts).astype("float64")
    data = Reducer().fit(vectors).transform(vectors) if variant == "pca10" else vectors
    params = params_for_size(len(texts))
    rss_before = peak_rss_mb()
    started = time.perf_counter()
    hdbscan.HDBSCAN(min_cluster_size=params.min_cluster_size, min_samples=params.min_samples).fit(
        data
    )
    return {
        "variant": variant,
        "steps": len(texts),
        "dims": int(data.shape[1]),
        "seconds": round(time.perf_counter() - started, 2),
        # ru_maxrss is a high-water mark: what HDBSCAN added above embedding's peak.
        "hdbscan_peak_rss_growth_mb": round(peak_rss_mb() - rss_before, 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }


def high_dimensional(data_dir: Path) -> dict[str, Any]:
    """HDBSCAN on the 256-d model vectors against on the 10-d PCA of them, each in a
    fresh process so that each peak memory is its own."""
    report: dict[str, Any] = {}
    for variant in ("raw", "pca10"):
        command = [sys.executable, __file__, "--high-dim", variant, "--data", str(data_dir)]
        result = subprocess.run(command, capture_output=True, text=True, check=True)
        report[variant] = json.loads(result.stdout.strip().splitlines()[-1])
    print(f"  HDBSCAN 5k steps: {report}", flush=True)
    return report


def _installed_mb(*distributions: str) -> float:
    from importlib.metadata import distribution

    total = 0
    for name in distributions:
        for file in distribution(name).files or ():
            path = Path(str(file.locate()))
            if path.is_file():
                total += path.stat().st_size
    return round(total / 1024**2, 1)


def embedder_speed(data_dir: Path) -> dict[str, Any]:
    """Texts per second of each installed backend on the same real step texts."""
    from analysis.core.demo import load_demo
    from analysis.core.embeddings import TfidfSvdEmbedder, WordLlamaEmbedder
    from analysis.core.steps import step_text

    texts = [step_text(s) for s in load_demo(data_dir, all_failed_steps=True).wrong]
    texts = (texts * (1 + 20_000 // max(len(texts), 1)))[:20_000]
    report: dict[str, Any] = {
        "texts": len(texts),
        "mean_chars": round(sum(map(len, texts)) / len(texts)),
    }
    started = time.perf_counter()
    model = WordLlamaEmbedder()
    model.transform(texts[:1])
    report["wordllama_load_s"] = round(time.perf_counter() - started, 2)
    started = time.perf_counter()
    model.transform(texts)
    report["wordllama_texts_per_s"] = round(len(texts) / (time.perf_counter() - started))
    started = time.perf_counter()
    TfidfSvdEmbedder().fit(texts).transform(texts)
    report["tfidf_fit_and_transform_texts_per_s"] = round(
        len(texts) / (time.perf_counter() - started)
    )
    report["wordllama_vs_tfidf_speed"] = round(
        report["wordllama_texts_per_s"] / report["tfidf_fit_and_transform_texts_per_s"], 2
    )
    report["installed_mb"] = {
        "wordllama": _installed_mb("wordllama"),
        "tokenizers": _installed_mb("tokenizers"),
        "safetensors": _installed_mb("safetensors"),
        "wordllama_with_all_its_dependencies_not_already_needed": _installed_mb(
            "wordllama",
            "tokenizers",
            "safetensors",
            "huggingface_hub",
            "hf-xet",
            "pydantic",
            "pydantic_core",
            "requests",
            "toml",
            "tqdm",
            "PyYAML",
            "fsspec",
            "filelock",
            "httpx2",
            "httpcore2",
            "anyio",
            "h11",
            "certifi",
            "idna",
            "urllib3",
            "charset-normalizer",
            "annotated-types",
            "typing-inspection",
            "truststore",
        ),
    }
    print(f"  embedders: {report}", flush=True)
    return report


def minilm_speed(data_dir: Path) -> dict[str, Any]:
    from analysis.core.demo import load_demo
    from analysis.core.embeddings import EmbeddingUnavailable, MiniLMEmbedder
    from analysis.core.steps import step_text

    texts = [step_text(s) for s in load_demo(data_dir, all_failed_steps=True).wrong][:300]
    report: dict[str, Any] = {"texts": len(texts)}
    for max_tokens in (64, 128):
        embedder = MiniLMEmbedder(max_tokens=max_tokens)
        try:
            embedder.transform(texts[:4])
        except EmbeddingUnavailable as error:
            return {"available": False, "reason": str(error)}
        started = time.perf_counter()
        embedder.transform(texts)
        rate = len(texts) / (time.perf_counter() - started)
        report[f"texts_per_s_at_{max_tokens}_tokens"] = round(rate, 1)
        print(f"  MiniLM int8, {max_tokens} tokens: {rate:.1f} texts/s", flush=True)
    report["available"] = True
    report["quality"] = []
    for (dataset, mode), (wrong, _, _) in demo_sets(data_dir).items():
        if mode != "wrong steps":
            continue
        from analysis.core.pipeline import cluster_wrong_steps

        outcome = cluster_wrong_steps(wrong, backend="minilm", seed=0)
        metrics = outcome.metrics
        report["quality"].append(
            {
                "dataset": dataset,
                **{k: metrics.get(k) for k in ("steps", "clusters", "noise_share", "top8_share")},
                "silhouette": metrics.get("silhouette"),
                "dbcv": metrics.get("dbcv"),
                "embed_s": metrics.get("embed_s"),
                "names": [
                    (round(p.share, 3), p.name)
                    for p in sorted(outcome.profiles.values(), key=lambda p: -p.share)
                ],
            }
        )
        print(f"  MiniLM on {dataset}: {report['quality'][-1]}", flush=True)
    return report


def growth(scale: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The exponent k in time ~ n^k between consecutive sizes."""
    import math

    curve = []
    for small, large in zip(scale, scale[1:]):
        ratio = large["steps"] / small["steps"]
        curve.append(
            {
                "from": small["steps"],
                "to": large["steps"],
                "time_exponent": round(
                    math.log(large["end_to_end_s"] / small["end_to_end_s"]) / math.log(ratio), 3
                ),
                "cluster_exponent": round(
                    math.log(max(large["cluster_s"], 1e-3) / max(small["cluster_s"], 1e-3))
                    / math.log(ratio),
                    3,
                ),
            }
        )
    return curve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=SHARED_DATA)
    parser.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES))
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--no-sklearn", action="store_true")
    parser.add_argument("--one-size", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--backend", default="wordllama", help=argparse.SUPPRESS)
    parser.add_argument("--high-dim", default="", help=argparse.SUPPRESS)
    parser.add_argument(
        "--minilm-only",
        action="store_true",
        help="only the MiniLM section (for a venv that has onnxruntime, tokenizers, the model)",
    )
    args, _ = parser.parse_known_args()  # make bench passes its own arguments on

    if args.minilm_only:
        out = args.out.with_name("clustering-minilm.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(minilm_speed(args.data), indent=2) + "\n")
        print(f"wrote {out}")
        return
    if args.high_dim:
        print(json.dumps(high_dimensional_one(args.data, args.high_dim)))
        return
    if args.one_size:
        result = one_size(
            args.data, args.one_size, backend=args.backend, with_sklearn=not args.no_sklearn
        )
        print(json.dumps(result))
        return

    report: dict[str, Any] = {
        "command": "python bench/clustering.py " + " ".join(sys.argv[1:]),
        "machine": machine(),
        "embeddings": "wordllama (default) against tfidf (fallback)",
    }
    started = time.perf_counter()
    print("== embedders", flush=True)
    report["embedders"] = embedder_speed(args.data)
    print("== demo quality", flush=True)
    report["quality"] = quality(args.data, "wordllama") + quality(args.data, "tfidf")
    print("== scale", flush=True)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    runs = [("wordllama", size, not args.no_sklearn) for size in sizes]
    runs.append(("tfidf", max(sizes), False))  # the fallback at the largest size, same data
    scale = []
    for backend, size, with_sklearn in runs:
        command = [sys.executable, __file__, "--one-size", str(size), "--data", str(args.data)]
        command += ["--backend", backend] + ([] if with_sklearn else ["--no-sklearn"])
        result = subprocess.run(command, capture_output=True, text=True, check=True)
        lines = result.stdout.strip().splitlines()
        for line in lines[:-1]:
            print(line, flush=True)
        scale.append(json.loads(lines[-1]))
    report["scale"] = scale
    report["growth"] = growth([run for run in scale if run["backend"] == "wordllama"])
    print("== HDBSCAN without dimension reduction", flush=True)
    report["high_dimensional"] = high_dimensional(args.data)
    print("== MiniLM embedder", flush=True)
    report["minilm"] = minilm_speed(args.data)
    report["total_s"] = round(time.perf_counter() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out} in {report['total_s']}s")


if __name__ == "__main__":
    main()
