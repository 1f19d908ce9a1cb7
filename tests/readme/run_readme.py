#!/usr/bin/env python3
"""Runs every command of README.md, in order, as a user would, on 127.0.0.1 only.

Each fenced block is one step, by its info string:
  ```bash                 run with bash; must exit 0
  ```bash server          a server: started in the background (previous one stopped), ready when it
                          logs "serving '...' on http://"; the blocks after it talk to it
  ```python               run with python3; must exit 0
  ```js                   run with node as an ES module (the `openai` package from tests/e2e/openai)
  ```LANG covered-by=F,.. not run here: each F (a test file, or .ci/run) must exist, and runs it in CI
Any other fence (json, text, ...) holds no command and is refused, so nothing is left unrun by accident.

The README's port 8080 becomes a free loopback port (PAGEDSERVE_PORT for the server, the text of every
block); `scripts/install.sh` installs into a temporary prefix from the build tree under test
(PAGEDSERVE_PREFIX, PAGEDSERVE_BUILD_DIR), whose bin/ leads PATH, so `pagedserve` is the installed one.

usage: run_readme.py README BUILD_DIR
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.M | re.S)
RUNNERS = {"bash", "python", "js"}


def blocks(readme: str):
    for m in FENCE.finditer(readme):
        words = m.group(1).split()
        line = readme.count("\n", 0, m.start()) + 1
        yield line, (words[0] if words else ""), words[1:], m.group(2)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class server:
    def __init__(self, command: str, env: dict, log: Path, scale: float):
        self.log = log
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(["bash", "-c", "exec " + command.replace("\\\n", " ")], env=env,
                                         stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30 * scale
        while time.monotonic() < deadline:
            if re.search(r"serving '.*' .*on http://", log.read_text(errors="replace")):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"server `{command.strip()}` did not become ready:\n{log.read_text(errors='replace')}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def main() -> int:
    readme_path, build_dir = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    repo = readme_path.parent
    scale = max(1.0, float(os.environ.get("PAGEDSERVE_TEST_TIME_SCALE", "1") or 1))
    port = free_port()
    work = Path(tempfile.mkdtemp(prefix="pagedserve-readme-"))
    prefix = work / "prefix"
    env = dict(os.environ, PAGEDSERVE_PORT=str(port), PAGEDSERVE_PREFIX=str(prefix), PAGEDSERVE_BUILD_DIR=str(build_dir),
               PATH=f"{prefix / 'bin'}:{os.environ.get('PATH', '')}", HF_HUB_OFFLINE="1")
    node_modules = repo / "tests" / "e2e" / "openai" / "node_modules"
    (work / "node_modules").symlink_to(node_modules)
    current = None
    ran = covered = 0
    try:
        for line, lang, attrs, body in blocks(readme_path.read_text()):
            where = f"README.md:{line}"
            cover = [a.split("=", 1)[1] for a in attrs if a.startswith("covered-by=")]
            if cover:
                for f in ",".join(cover).split(","):
                    if not (repo / f).exists():
                        print(f"{where}: covered-by names {f}, which does not exist")
                        return 1
                print(f"{where}: covered by {', '.join(cover)}")
                covered += 1
                continue
            if lang not in RUNNERS:
                print(f"{where}: a ```{lang} block is neither run nor covered-by a test: mark it")
                return 1
            text = body.replace("8080", str(port))
            print(f"=== {where}: {lang} {' '.join(attrs)}\n{text}", flush=True)
            if lang == "bash" and "server" in attrs:
                if current:
                    current.stop()
                current = server(text, env, work / f"server-{line}.log", scale)
                ran += 1
                continue
            if lang == "bash":
                command = ["bash", "-euo", "pipefail", "-c", text]
            elif lang == "python":
                command = [sys.executable, "-c", text]
            else:
                script = work / f"block-{line}.mjs"
                script.write_text(text)
                command = ["node", "--experimental-websocket", "--no-warnings", str(script)]
            result = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=300 * scale)
            print(result.stdout + result.stderr, flush=True)
            if result.returncode != 0:
                print(f"{where}: exit status {result.returncode}")
                return 1
            if '"error":' in result.stdout:  # curl -s exits 0 on an HTTP error: its JSON error body fails the step
                print(f"{where}: the server answered with an error")
                return 1
            ran += 1
        print(f"README: {ran} blocks run, {covered} covered by the tests they name")
        return 0 if ran else 1
    finally:
        if current:
            current.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
