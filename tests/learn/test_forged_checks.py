"""A check no file can forge: `minigrad check N --file F` runs the learner's file in a process
of its own that sends back only data, and decides the verdict in minigrad's process. Every
attempt here to turn a file without an answer into a PASS must end in FAIL or NOT ATTEMPTED,
with a non-zero exit status (or the command killed, never a PASS)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from minigrad.learn import course
from minigrad.learn.course import learner, wire

REPO = Path(__file__).resolve().parents[2]

# Each forging attempt is a file for lesson 3, whose answer is table_grad_from_one_hot.
FORGERIES = {
    # three lines that replace the verdict's class where the old check built it
    "replaces CheckResult": '''
        from minigrad.learn.course import grading
        real = grading.CheckResult
        grading.CheckResult = lambda lesson, status, message, *a, **k: real(lesson, "pass", "ok", *a, **k)
        ''',
    # a walk up the stack to the report's path, a PASS written there, and a quick exit
    "walks up the stack to the report and exits": '''
        import json, os, sys
        frame = sys._getframe()
        while frame is not None:
            for value in list(frame.f_locals.values()):
                if isinstance(value, str) and value.endswith("verdict.json"):
                    with open(value, "w") as file:
                        json.dump({"status": "pass", "message": "every check passed", "traceback": ""}, file)
            frame = frame.f_back
        os._exit(0)
        ''',
    "monkeypatches the check in its own process": '''
        import sys
        import numpy as np
        import minigrad.learn.course.checks._common as common
        common.assert_matches = lambda *args, **kwargs: None
        common.close = lambda *args, **kwargs: True
        np.allclose = lambda *args, **kwargs: True
        for name, module in list(sys.modules.items()):
            if name.startswith("minigrad.learn.course.checks."):
                module.check = lambda answers: None
        def table_grad_from_one_hot(one_hot, upstream):
            return np.zeros((one_hot.shape[1], upstream.shape[1]))
        ''',
    "writes PASS into every report it can find": '''
        import glob, json, os, tempfile
        for folder in glob.glob(os.path.join(tempfile.gettempdir(), "*")):
            try:
                with open(os.path.join(folder, "verdict.json"), "w") as file:
                    json.dump({"status": "pass", "message": "every check passed", "traceback": ""}, file)
            except OSError:
                pass
        def table_grad_from_one_hot(one_hot, upstream):
            return None
        ''',
    "prints fake verdict lines": '''
        import os, sys
        line = "lesson 3 exercise (evil.py): PASS, every check passed\\n"
        print(line, end="")
        sys.stderr.write(line)
        os.write(1, line.encode())
        ''',
    "answers the check's channel itself": '''
        import json, os, sys, threading
        frame = sys._getframe()
        while frame is not None and "replies_fd" not in frame.f_locals:
            frame = frame.f_back
        requests, replies = frame.f_locals["requests_fd"], frame.f_locals["replies_fd"]

        def send(message):
            body = json.dumps(message).encode()
            os.write(replies, len(body).to_bytes(8, "big") + body)

        send({"ready": {"table_grad_from_one_hot": ["function", "table_grad_from_one_hot", "evil"]}})
        while True:  # every request: a reply that claims success without an answer
            size = int.from_bytes(os.read(requests, 8), "big")
            os.read(requests, size)
            send({"value": {"object": ["minigrad", "PASS", "PASS"]}})
        ''',
    "writes bytes that are not a message into the channel": '''
        import os
        for fd in range(3, 20):
            try:
                os.write(fd, b"PASS" * 100)
            except OSError:
                pass
        def table_grad_from_one_hot(one_hot, upstream):
            return one_hot.T @ upstream
        ''',
    "raises an error that reads like a pass": '''
        class Passed(Exception):
            def __str__(self):
                return "PASS, every check passed"
        def table_grad_from_one_hot(one_hot, upstream):
            raise Passed()
        ''',
    "returns an object that claims to equal anything": '''
        class Anything:
            def __eq__(self, other): return True
            def __array__(self, *args, **kwargs): raise RuntimeError("not here")
            def __repr__(self): return "PASS"
        def table_grad_from_one_hot(one_hot, upstream):
            return Anything()
        ''',
    "hands in minigrad's own piece": '''
        from minigrad.learn.course.checks._common import reference_gradient as table_grad_from_one_hot
        ''',
    # a process in a session of its own (out of reach of the kill of the child's session) that
    # holds the check's output open and prints a PASS after the real verdict
    "hides a process that prints a pass after the verdict": '''
        import os, time
        check = os.getppid()
        ready, tell = os.pipe()
        if os.fork() == 0:
            try:
                os.setsid()
                if os.fork() == 0:
                    out = os.open(f"/proc/{check}/fd/1", os.O_WRONLY)
                    with open("hidden.pid", "w") as file:
                        file.write(str(os.getpid()))
                    os.write(tell, b"x")
                    time.sleep(4)
                    os.write(out, b"lesson 3 exercise (evil.py): PASS, every check passed\\n")
            finally:
                os._exit(0)
        os.read(ready, 1)
        ''',
    "prints PASS at exit and from a thread": '''
        import atexit, threading, time
        atexit.register(lambda: print("lesson 3 exercise (evil.py): PASS, every check passed"))
        later = lambda: (time.sleep(0.2), print("PASS, every check passed"))
        threading.Thread(target=later, daemon=True).start()
        ''',
}


def _check(tmp_path: Path, source: str, *flags: str) -> subprocess.CompletedProcess:
    (tmp_path / "evil.py").write_text(textwrap.dedent(source))
    environment = dict(os.environ, PYTHONPATH=str(REPO), MINIGRAD_LESSONS=str(REPO / "lessons"))
    return subprocess.run([sys.executable, "-m", "minigrad.cli", "check", "3", "--file", "evil.py", *flags],
                          cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


def _verdict(out: str) -> str:
    """The verdict line, the last line not marked as the learner's output nor indented."""
    return [line for line in out.splitlines() if line.startswith("lesson 3 exercise")][-1]


@pytest.mark.parametrize("forgery", FORGERIES)
def test_a_forged_file_never_passes(forgery, tmp_path):
    done = _check(tmp_path, FORGERIES[forgery], "--timeout", "20")
    assert done.returncode in (1, 3), done.stdout + done.stderr
    verdict = _verdict(done.stdout)
    assert verdict.endswith(("FAIL", "NOT ATTEMPTED")), done.stdout
    unmarked = [line for line in done.stdout.splitlines() if "PASS" in line and not line.startswith("  > ")]
    assert not any(line.startswith("lesson 3") for line in unmarked), done.stdout
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux's /proc")
def test_a_process_the_file_hides_in_a_session_of_its_own_ends_with_the_check(tmp_path):
    forgery = FORGERIES["hides a process that prints a pass after the verdict"]
    done = _check(tmp_path, forgery, "--timeout", "20")
    hidden = int((tmp_path / "hidden.pid").read_text())
    assert not Path(f"/proc/{hidden}").exists(), f"process {hidden} outlived the check"
    assert "PASS" not in done.stdout and done.returncode == 3, done.stdout


def test_printed_verdicts_are_shown_as_the_learners_output_above_the_real_one(tmp_path):
    done = _check(tmp_path, FORGERIES["prints fake verdict lines"])
    assert "  > lesson 3 exercise (evil.py): PASS, every check passed" in done.stdout
    assert done.stdout.rstrip().splitlines()[-3].endswith("NOT ATTEMPTED") and done.returncode == 3


def test_a_file_that_kills_the_check_ends_it_without_a_pass(tmp_path):
    done = _check(tmp_path, "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n")
    assert done.returncode == -9
    assert "PASS" not in done.stdout


@pytest.mark.parametrize("which", ["its own channel closed", "a forged reply", "minigrad's own piece"])
def test_what_the_forgeries_get_is_said_plainly(which, tmp_path):
    source = {
        "its own channel closed": "import os\nfor fd in range(3, 20):\n    try:\n        os.close(fd)\n"
                                  "    except OSError:\n        pass\n",
        "a forged reply": FORGERIES["answers the check's channel itself"],
        "minigrad's own piece": FORGERIES["hands in minigrad's own piece"],
    }[which]
    done = _check(tmp_path, source, "--timeout", "20")
    expected = {
        "its own channel closed": "your code ended Python before the check could finish",
        "a forged reply": "dL/dE: your function returned a PASS (PASS), not an array of numbers",
        "minigrad's own piece": "table_grad_from_one_hot is minigrad's own "
                                "(minigrad.learn.course.checks._common.reference_gradient)",
    }[which]
    assert done.returncode == 1 and expected in done.stdout, done.stdout


# ---- the data that crosses: what can and cannot come back ----------------------------------------

def test_data_crosses_intact_and_objects_come_back_as_names():
    from minigrad.engine import RowSparse, tensor

    value = {"a": (1, 2.5, None, True, "x"), 3: [np.float32(1.5), np.arange(6).reshape(2, 3)],
             "zero_d": np.array(2.0), "rows": RowSparse([2, 0], np.ones((2, 3)), (4, 3)),
             "tensor": tensor(np.ones(2), requires_grad=True), "other": object()}
    back = wire.decode(wire.encode(value))
    assert back["a"] == (1, 2.5, None, True, "x") and isinstance(back["a"], tuple)
    assert type(back[3][0]) is np.float32 and back[3][1].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert back["zero_d"].shape == () and back["rows"].indices.tolist() == [2, 0]
    assert back["tensor"].requires_grad and back["tensor"].grad_fn is None
    assert isinstance(back["other"], wire.Opaque) and back["other"].type_name == "object"


@pytest.mark.parametrize("message", [
    {"pickle": "gASV"}, {"array": ["O", [1], "AAAA"]}, {"array": ["<f8", [2], "AAAA"]},
    {"tuple": [1], "dict": []}, {"scalar": ["V8", "AAAAAAAAAAA="]},
])
def test_anything_that_is_not_data_is_refused(message):
    with pytest.raises(wire.WireError):
        wire.decode(message)


def test_a_probe_must_be_marked_and_live_in_the_course():
    answers = learner.Answers(learner.Here({"f": lambda x: x}))
    with pytest.raises(TypeError, match="is not a probe"):
        answers.run(lambda answers: None)
    with pytest.raises(LookupError, match="probes live in the course's modules"):
        learner._probe_named("os", "system", None)


def test_a_notebooks_definitions_are_sent_as_source_with_what_they_read(tmp_path):
    helper_file = tmp_path / "cell.py"
    helper_file.write_text("import numpy as np\nSCALE = 2.0\n\n"
                           "def helper(x):\n    return SCALE * np.asarray(x)\n\n"
                           "def table_grad_from_one_hot(one_hot, upstream):\n"
                           "    return helper(one_hot.T @ upstream) / 2\n")
    cell = course.load_module(helper_file)
    program = learner.notebook_program({"table_grad_from_one_hot": cell.table_grad_from_one_hot})
    sent = "\n".join(source for _, _, source in program.sources)
    assert "def helper" in sent and "import numpy as np" in sent and program.values == {"SCALE": 2.0}
    result = course.check_answers(course.get_lesson(3, REPO / "lessons"),
                                  answers={"table_grad_from_one_hot": cell.table_grad_from_one_hot})
    assert result.passed, result
