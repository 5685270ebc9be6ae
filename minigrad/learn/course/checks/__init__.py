"""Each lesson's check, `NN_slug.py` with `check(answers)`, and the diagnosis they share (`_common`).

Loaded by minigrad.learn.course.grading (`importlib.import_module`: the names start with digits).
A check's reference comes from minigrad's own machinery (its backward confirmed by central
differences, its optimizers, its models), never from the reference answers in lessons/solutions/.
"""
