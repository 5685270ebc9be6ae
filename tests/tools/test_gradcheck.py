"""gradcheck itself: passes right gradients, fails wrong ones with a readable report."""

import re
import warnings

import numpy as np
import pytest

import minigrad as mg


class WrongSoftplus(mg.Function):
    """softplus(x) = log(1 + e^x) with a deliberately wrong backward (forgets the sigmoid)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.log1p(np.exp(x))

    @staticmethod
    def backward(ctx, grad):
        return grad  # the right answer is grad * sigmoid(x)


class Softplus(WrongSoftplus):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        return grad / (1 + np.exp(-x))


def leaf(values):
    return mg.tensor(np.asarray(values, dtype=np.float64), requires_grad=True, name="x")


def test_right_function_passes():
    report = mg.gradcheck(Softplus.apply, [leaf([[-1.0, 0.5], [2.0, 0.1]])])
    assert report.ok and bool(report) and "passed" in str(report)


def test_wrong_function_fails_with_readable_report():
    x = leaf([[-1.0, 0.5], [2.0, -3.0]])
    with pytest.raises(mg.GradcheckError) as err:
        mg.gradcheck(lambda a: WrongSoftplus.apply(a).sum(), [x])
    text = str(err.value)
    assert "FAILED" in text and "x (2, 2)" in text
    assert "worst at x[1, 1]" in text  # sigmoid(-3) is furthest from 1


def test_report_without_raising():
    report = mg.gradcheck(WrongSoftplus.apply, [leaf([0.0])], raise_exception=False)
    assert not report.ok
    check = report.inputs[0]
    assert check.numerical == pytest.approx(0.5, abs=1e-6) and check.analytical == 1.0


def test_random_directions_pass_right_and_fail_wrong_naming_the_element():
    x = leaf(np.linspace(-2, 2, 50).reshape(5, 10))
    assert mg.gradcheck(Softplus.apply, [x], directions=3).mode == "3 random directions"
    report = mg.gradcheck(lambda a: WrongSoftplus.apply(a).sum(), [x], directions=4,
                          raise_exception=False)
    assert not report.ok and report.mode == "random directions failed; full check"
    assert report.inputs[0].worst_index == (0, 0)  # x = -2: sigmoid furthest from 1


def test_float32_input_warns_and_checks_a_float64_copy():
    x = mg.tensor([0.3, -0.7], requires_grad=True)
    with pytest.warns(UserWarning, match="float32"):
        assert mg.gradcheck(lambda a: a.tanh(), [x]).ok
    assert x.dtype == np.float32 and x.grad is None  # the caller's tensor is untouched


def test_float64_input_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mg.gradcheck(lambda a: a.tanh(), [leaf([0.3])])


def test_needs_an_input_that_requires_grad():
    with pytest.raises(ValueError, match="no input requires grad"):
        mg.gradcheck(lambda a: a * 2.0, [mg.tensor(np.ones(2))])


def test_non_checked_inputs_are_passed_through():
    scale = mg.tensor(np.array([2.0, 3.0]))
    assert mg.gradcheck(lambda a, s: a * s, [leaf([1.0, 1.0]), scale]).ok


def test_works_for_inputs_that_are_not_c_contiguous():
    w = mg.tensor(np.arange(6.0).reshape(2, 3).T, requires_grad=True)  # Fortran order
    report = mg.gradcheck(lambda w: (w * w).sum(), [w])
    assert report.ok and report.inputs[0].numerical != 0


# ---- a backward that returns the wrong shape, the wrong type, or raises: FAILED, never a crash ----

class Doubles(mg.Function):
    """2x; the classes below keep this forward and get its backward wrong, each in one way."""

    @staticmethod
    def forward(ctx, x):
        return 2 * x


class RowShaped(Doubles):
    """Its backward returns a (1, n) gradient for an (n,) input."""

    @staticmethod
    def backward(ctx, grad):
        return (2 * grad)[None, :]


class Raises(Doubles):
    @staticmethod
    def backward(ctx, grad):
        raise ValueError("this backward is broken")


class IntegerGradient(Doubles):
    @staticmethod
    def backward(ctx, grad):
        return np.full(grad.shape, 2)


class ListGradient(Doubles):
    @staticmethod
    def backward(ctx, grad):
        return (2 * grad).tolist()


class SecondInputWrong(mg.Function):
    """a * b, but b's gradient is summed to a scalar."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved
        return grad * b, (grad * a).sum()


# The engine checks every edge too and may raise first; gradcheck then reports that error. Either
# way the report is FAILED and names the op, the input slot and both shapes.

@pytest.mark.parametrize("directions", [None, 4])
def test_wrong_shape_backward_fails_naming_op_input_and_both_shapes(directions):
    x = leaf([1.0, 2.0, 3.0])
    report = mg.gradcheck(RowShaped.apply, [x], directions=directions, raise_exception=False)
    assert not report.ok and "FAILED" in str(report)
    assert report.inputs == []  # nothing was compared against a gradient of the wrong shape
    wrong = r"RowShapedBackward returned a gradient of shape \(1, 3\) for (its )?input 0\b.*\(3,\)"
    assert any(re.search(wrong, p) for p in report.problems), report.problems
    with pytest.raises(mg.GradcheckError, match=r"FAIL .*RowShapedBackward .*\(1, 3\).*input 0\b.*\(3,\)"):
        mg.gradcheck(RowShaped.apply, [x], directions=directions)


@pytest.mark.parametrize("directions", [None, 4])
def test_wrong_shape_on_the_second_input_is_named(directions):
    a, b = leaf([1.0, 2.0]), mg.tensor(np.array([3.0, -1.0]), requires_grad=True, name="b")
    report = mg.gradcheck(SecondInputWrong.apply, [a, b], directions=directions, raise_exception=False)
    assert not report.ok
    wrong = r"SecondInputWrongBackward returned a gradient of shape \(\) for (its )?input 1\b.*\(2,\)"
    assert any(re.search(wrong, p) for p in report.problems), report.problems


@pytest.mark.parametrize("directions", [None, 4])
def test_backward_that_raises_is_a_failed_report(directions):
    report = mg.gradcheck(lambda t: Raises.apply(t * 1.0), [leaf([1.0, 2.0])], directions=directions,
                          raise_exception=False)
    assert not report.ok
    assert report.problems == ["backward raised ValueError: this backward is broken"]
    with pytest.raises(mg.GradcheckError, match="backward raised ValueError: this backward is broken"):
        mg.gradcheck(Raises.apply, [leaf([1.0, 2.0])], directions=directions)


@pytest.mark.parametrize("directions", [None, 4])
@pytest.mark.parametrize("function, problem", [
    (IntegerGradient, r"IntegerGradientBackward returned a gradient of dtype int64 .*input 0.*floating"),
    (ListGradient, r"ListGradientBackward returned a list.* input 0"),
])
def test_gradient_of_the_wrong_type_fails(directions, function, problem):
    report = mg.gradcheck(function.apply, [leaf([1.0, 2.0])], directions=directions, raise_exception=False)
    assert not report.ok
    assert any(re.search(problem, p) for p in report.problems), report.problems


def test_gradcheck_names_a_wrong_shape_that_reached_grad_without_an_edge_check():
    # an engine that let a wrong shape through: gradcheck's own check still fails it
    x = leaf([1.0, 2.0, 3.0])

    def fn(t):
        out = t * 2.0
        t.grad = np.ones((1, 3))  # what a shape-unchecked engine would have stored
        return out.detach()

    report = mg.gradcheck(fn, [x], raise_exception=False)
    assert not report.ok
    assert report.problems == ["x.grad is a gradient of shape (1, 3), but x has shape (3,)"]


# ---- non-finite values: NaN or inf anywhere fails, in both modes, naming which and where ----
# (`error > tol` is False for NaN, so a comparison alone lets NaN pass: every one of these
# passed as "max abs error nan" before the check looked for non-finite values)

class NanBackward(Doubles):
    """Its backward is right except one NaN, in element 1."""

    @staticmethod
    def backward(ctx, grad):
        g = 2 * grad
        g[1] = np.nan
        return g


class InfBackward(NanBackward):
    @staticmethod
    def backward(ctx, grad):
        g = 2 * grad
        g[..., -1] = np.inf
        return g


class ClippedNaN(mg.Function):
    """An op whose forward turns NaN into 0 (so every loss is finite) but whose backward
    still sends NaN: only the analytical side is non-finite."""

    @staticmethod
    def forward(ctx, x):
        return np.zeros_like(x)

    @staticmethod
    def backward(ctx, grad):
        return np.full(grad.shape, np.nan)


@pytest.mark.parametrize("directions", [None, 4])
def test_a_backward_returning_nan_fails_naming_the_analytical_side_and_the_element(directions):
    x = leaf([1.0, 2.0, 3.0])
    report = mg.gradcheck(NanBackward.apply, [x], directions=directions, raise_exception=False)
    assert not report.ok and "FAILED" in str(report)
    assert "analytical gradient is nan at x[1]" in str(report), str(report)
    assert report.inputs[0].worst_index == (1,)
    with pytest.raises(mg.GradcheckError, match=r"analytical gradient is nan at x\[1\]"):
        mg.gradcheck(NanBackward.apply, [x], directions=directions)


@pytest.mark.parametrize("directions", [None, 4])
def test_an_infinite_analytical_gradient_fails(directions):
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    report = mg.gradcheck(InfBackward.apply, [x], directions=directions, raise_exception=False)
    assert not report.ok
    assert "analytical gradient is inf at x[0, 1]" in str(report), str(report)
    assert "2 non-finite" in str(report)  # both rows' last element


@pytest.mark.parametrize("directions", [None, 4])
def test_an_all_nan_backward_of_a_constant_fails(directions):
    report = mg.gradcheck(ClippedNaN.apply, [leaf([0.5, -0.5])], directions=directions, raise_exception=False)
    assert not report.ok
    assert "analytical gradient is nan at x[0]" in str(report), str(report)


@pytest.mark.parametrize("directions", [None, 4])
def test_sqrt_at_zero_fails_naming_both_the_numerical_nan_and_the_analytical_inf(directions):
    # sqrt(0 - eps) is NaN, so the central difference is NaN; d sqrt/dx at 0 is inf
    x = leaf([4.0, 0.0, 1.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        report = mg.gradcheck(lambda t: t ** 0.5, [x], directions=directions, raise_exception=False)
    assert not report.ok, str(report)
    text = str(report)
    assert "numerical gradient is nan at x[1]" in text, text
    assert re.search(r"analytical gradient is -?inf at x\[1\]", text), text  # sign: of the weight


def test_random_directions_fail_on_a_nan_directional_derivative_even_if_the_full_check_would_not_see_it():
    # fn is NaN on one call only (the minus side of the first random direction): the full
    # check that a failed directions check runs would then pass, but a NaN once seen is a failure
    x = leaf([1.0, 2.0])
    calls = {"n": 0}

    def flaky(t):
        calls["n"] += 1
        return t * (np.nan if calls["n"] == 3 else 1.0)  # the first direction's plus side only

    report = mg.gradcheck(flaky, [x], directions=4, raise_exception=False)
    assert not report.ok, str(report)
    assert "numerical" in str(report) and "nan" in str(report), str(report)


def test_a_nan_max_error_is_never_reported_as_passed():
    x = leaf([1.0, 2.0, 3.0])
    report = mg.gradcheck(NanBackward.apply, [x], raise_exception=False)
    assert not any(c.ok for c in report.inputs)
    assert "passed" not in str(report)


@pytest.mark.parametrize("directions", [None, 4])
def test_a_nan_gradient_of_a_0d_input_fails_naming_the_input(directions):
    x = mg.tensor(np.float64(0.5), requires_grad=True, name="x")
    report = mg.gradcheck(ClippedNaN.apply, [x], directions=directions, raise_exception=False)
    assert not report.ok
    assert "analytical gradient is nan at x" in str(report), str(report)


# ---- the random-direction mode's former name, fast=, kept one release --------------------------

def test_fast_is_a_deprecated_spelling_of_directions():
    x = leaf(np.linspace(-2, 2, 12).reshape(3, 4))
    with pytest.warns(DeprecationWarning, match=r"gradcheck\(fast=\.\.\.\) is deprecated.*directions=k"):
        assert mg.gradcheck(Softplus.apply, [x], fast=True).mode == "4 random directions"
    with pytest.warns(DeprecationWarning):
        assert mg.gradcheck(Softplus.apply, [x], fast=True, directions=2).mode == "2 random directions"
    with pytest.warns(DeprecationWarning):
        assert mg.gradcheck(Softplus.apply, [x], fast=False, directions=2).mode == "full"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new spelling says nothing
        assert mg.gradcheck(Softplus.apply, [x]).mode == "full"
        assert mg.gradcheck(Softplus.apply, [x], directions=2).mode == "2 random directions"


@pytest.mark.parametrize("directions", [0, -1, 2.5, True, "4"])
def test_directions_must_be_a_whole_number_of_at_least_one(directions):
    expected = rf"gradcheck: directions must be a whole number >= 1 .* got {re.escape(repr(directions))}"
    with pytest.raises(ValueError, match=expected):
        mg.gradcheck(Softplus.apply, [leaf([1.0])], directions=directions)


# ---- the full check's central difference can be another's (lesson 2's) ---------------------------

def test_central_difference_is_the_full_checks_own_and_leaves_x_alone():
    from minigrad.tools.gradcheck import central_difference

    x = np.array([[0.5, -1.0], [2.0, 0.25]])
    before = x.copy()
    got = central_difference(lambda z: float(np.sum(np.sin(z) * z)), x, 1e-6)
    assert np.allclose(got, np.cos(x) * x + np.sin(x), atol=1e-8) and np.array_equal(x, before)
    scalar = central_difference(lambda z: float(z**3), np.array(2.0), 1e-4)
    assert scalar.shape == () and np.isclose(scalar, 12.0)


def test_gradcheck_runs_on_the_differences_it_is_given():
    x = mg.tensor(np.random.default_rng(0).normal(size=(3, 2)), requires_grad=True, name="x")
    calls = []

    def counted(f, values, eps):
        calls.append(values.shape)
        from minigrad.tools.gradcheck import central_difference

        return central_difference(f, values, eps)

    assert mg.gradcheck(lambda t: t.tanh(), [x], differences=counted).ok and calls == [(3, 2)]

    def forward_difference(f, values, eps):  # a worse estimate: the check sees the difference
        base, grad = f(values), np.zeros(values.shape)
        for i in np.ndindex(values.shape):
            nudged = values.copy()
            nudged[i] += 1e-2
            grad[i] = (f(nudged) - base) / 1e-2
        return grad

    before = x.data.copy()
    report = mg.gradcheck(lambda t: t.tanh() ** 2, [x], differences=forward_difference, raise_exception=False)
    assert not report.ok and np.array_equal(x.data, before)
    with pytest.raises(ValueError, match=r"differences returned a gradient of shape \(6,\) for an input of "
                                         r"shape \(3, 2\)"):
        mg.gradcheck(lambda t: t.tanh(), [x], differences=lambda f, v, eps: np.zeros(6))
