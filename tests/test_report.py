"""The HTML compile report, rendered in headless Chromium."""
import os
import re
import shutil
import subprocess
import zlib
import struct

import numpy as np
import pytest

import tracejit
from tracejit.diagnostics.report import fusion_graph_svg, kernel_functions, report


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="session")
def chromium():
    path = _chromium()
    if path is None and shutil.which("apt-get") and hasattr(os, "geteuid") and os.geteuid() == 0:
        try:
            subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "chromium", "chromium-driver"],
                           capture_output=True, timeout=600, check=False,
                           env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        except (subprocess.TimeoutExpired, OSError):
            pass
        path = _chromium()
    if path is None:
        pytest.skip("headless Chromium is not installed and could not be installed with apt-get "
                    "(apt-get install chromium chromium-driver)")
    return path


def _run_chromium(chromium, tmp_path, url, *extra):
    profile = tmp_path / "profile"
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
           *extra, url]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return r


def layer(x, w, b):
    h = x @ w + b
    h = h - h.max(-1, keepdims=True)
    e = np.exp(h)
    return (e / e.sum(-1, keepdims=True)).reshape(-1)


def _png_pixels(path):
    """Decode an 8-bit RGB/RGBA non-interlaced PNG into rows of bytes (Chromium's screenshots)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        ftype, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return rows, bpp


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "layer.html"
    text = report(layer, "f32[64,128]", "f32[128,32]", "f32[32]", path=str(path))
    return path, text


def test_report_content(page):
    path, text = page
    assert path.read_text() == text
    assert "<script" not in text and "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    for section in ("Fusion graph", "Traced program", "Optimized program", "Timings", "Cost analysis",
                    "Memory analysis", "Generated code per kernel"):
        assert section in text
    assert "dot_general" in text and "reduce_max" in text          # traced program and kernel ops
    assert "define " in text                                         # LLVM IR of the kernel
    assert "flops" in text and "temp_size_in_bytes" in text          # analyses
    assert re.search(r"LLVM: \w+</td>", text)                        # per-stage LLVM timings
    compiled = tracejit.jit(layer).lower(np.ones((64, 128), np.float32), np.ones((128, 32), np.float32),
                                         np.ones(32, np.float32)).compile()
    for i in range(len(compiled.executable.plan.steps)):
        assert f'id="step-{i}"' in text


def test_graph_nodes_and_edges():
    # A product large enough for BLAS (small ones become fused sums: passes/small_dots.py).
    compiled = tracejit.jit(layer).lower(np.ones((32, 64), np.float32), np.ones((64, 48), np.float32),
                                         np.ones(48, np.float32)).compile()
    plan = compiled.executable.plan
    svg = fusion_graph_svg(plan)
    from tracejit.compiler.plan import step_reads, step_writes
    for i, step in enumerate(plan.steps):
        for b in step_reads(step):
            assert f'data-from="buf-{b}" data-to="step-{i}"' in svg
        for b in step_writes(step):
            assert f'data-from="step-{i}" data-to="buf-{b}"' in svg
    for b in plan.inputs:
        assert f'id="buf-{b}"' in svg
    assert 'class="node kernel"' in svg and 'class="node dot"' in svg


def test_kernel_functions():
    ir = 'define void @"f_k0"(i8* %a) {\nentry:\n  ret void\n}\ndeclare float @ext(float)\n' \
         'define internal float @helper(float %x) {\n  ret float %x\n}\n'
    fns = kernel_functions(ir)
    assert list(fns) == ["f_k0", "helper"] and fns["f_k0"].endswith("}") and "ret void" in fns["f_k0"]


def test_report_without_kernels_and_errors(tmp_path):
    text = report(lambda x: x, "f32[3]")
    assert "Fusion graph" in text
    with pytest.raises(ValueError, match="backend"):
        _reference_report()


def _reference_report():
    old = tracejit.config.backend
    tracejit.config.update("backend", "reference")
    try:
        report(lambda x: x + 1, "f32[3]")
    finally:
        tracejit.config.update("backend", old)


def test_renders_in_chromium(chromium, page, tmp_path):
    path, _ = page
    r = _run_chromium(chromium, tmp_path, path.as_uri(), "--dump-dom")
    dom = r.stdout
    assert "<svg" in dom, r.stderr[-2000:]
    nodes = re.findall(r'<g id="(step|buf)-(\d+)" class="node', dom)
    assert sum(1 for k, _ in nodes if k == "step") >= 2 and sum(1 for k, _ in nodes if k == "buf") >= 4
    assert dom.count('class="edge') >= 5
    shot = tmp_path / "shot.png"
    r = _run_chromium(chromium, tmp_path, path.as_uri(), f"--screenshot={shot}", "--window-size=1000,700",
                      "--hide-scrollbars")
    assert shot.exists() and shot.stat().st_size > 5000, r.stderr[-2000:]
    rows, bpp = _png_pixels(shot)
    pixels = {row[i:i + 3] for row in rows[::7] for i in range(0, len(row), bpp * 5)}
    assert len(pixels) > 20   # not one color: text, boxes and fills were drawn
    # The graph's box fills (kernel blue, input green) are on screen.
    assert any(abs(p[0] - 0xdb) < 6 and abs(p[1] - 0xea) < 6 and abs(p[2] - 0xfe) < 6 for p in pixels)
