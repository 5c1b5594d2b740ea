"""The script_analysis and profile_function examples end to end at a small
size (issue 14's part of the examples; tests/cli_python_script.sh runs it
beside test_script.py and test_profile.py)."""

from __future__ import annotations

import shutil

from test_examples import FAST, ROOT, run


def test_script_analysis_example(tmp_path, cache_dir):
    folder = tmp_path / "script_analysis"
    shutil.copytree(ROOT / "examples" / "script_analysis", folder)
    out = run(["-m", "modelbench", "script", "captioning_demo.py", "--analyze-only",
               "--max-depth", "1"], folder)
    assert "captioner (executed 3x)" in out and "classifier (executed 3x)" in out
    assert "captioner.encoder (executed 3x)" in out  # the wrapped module
    assert "Input:      ids: int64[2, 5]" in out
    out = run(["-m", "modelbench", "script", "captioning_demo.py", "-c", "EAGER,ORT_CPU"]
              + FAST, folder)
    assert "2 models benchmarked, 0 failed" in out, out


def test_profile_function_example(tmp_path, cache_dir):
    folder = tmp_path / "profile_function"
    shutil.copytree(ROOT / "examples" / "profile_function", folder)
    out = run(["profile_classify.py", "--calls", "4", "--min-time", "0",
               "--conversions", "EAGER,JIT_TRACE,ORT_CPU"], folder)
    assert "modelbench profile: classify" in out and "4 calls measured" in out, out
    rows = {line.split()[0]: line for line in out.splitlines()
            if line.strip().startswith(("EAGER ", "JIT_TRACE ", "ORT_CPU "))}
    assert set(rows) == {"EAGER", "JIT_TRACE", "ORT_CPU"}, out
    # JIT_TRACE validated by torch, ORT_CPU by the C library in this process.
    assert "%" in rows["JIT_TRACE"] and "%" in rows["ORT_CPU"], out
    assert "last result: [(" in out
