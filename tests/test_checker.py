"""tracejit.check_program re-derives every type: hand-built broken programs
must raise ProgramTypeError naming the problem; traced programs must pass."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import ProgramTypeError, check_program, jit, make_jaxpr
from tracejit.core.avals import ShapedArray
from tracejit.core.ir import Eqn, Literal, Program, Var
from tracejit.core.primitive import Primitive
from tracejit.ops.call import call_p
from tracejit.ops.elementwise import binary_prims, convert_element_type_p, unary_prims
from tracejit.ops.reductions import reduce_prims
from tracejit.ops.structural import reshape_p

F32 = ShapedArray((3,), np.float32)
F64 = ShapedArray((3,), np.float64)
MUL = binary_prims["mul"]
ADD = binary_prims["add"]


def lit(v, dtype=np.float32):
    return Literal(v, ShapedArray((), dtype))


def program_with(eqns, in_vars, outputs, const_vars=(), const_values=()):
    return Program(list(const_vars), list(const_values), in_vars, eqns, outputs)


def test_valid_programs_pass():
    a, b = Var(F32), Var(F32)
    check_program(program_with([Eqn(MUL, [a, lit(2.0)], [b], {})], [a], [b]))
    for fun, args in [(lambda x: np.sin(x) * 2 + x.sum(), (np.ones(3),)),
                      (lambda x, y: (x @ y).T[::-1], (np.ones((2, 3), np.float32), np.ones((3, 4), np.float32))),
                      (lambda x: jnp.where(x > 0, x, 0).astype(np.int32), (np.ones((2, 2)),)),
                      (lambda x: jit(lambda y: y * 2, inline=False)(x) + 1, (np.ones(3),))]:
        check_program(make_jaxpr(fun)(*args))


def test_wrong_output_dtype():
    a, b = Var(F32), Var(F64)
    with pytest.raises(ProgramTypeError, match=r"equation 0 \(mul\).*f64\[3\].*derives f32\[3\]"):
        check_program(program_with([Eqn(MUL, [a, lit(2.0)], [b], {})], [a], [b]))


def test_wrong_output_shape():
    a, b = Var(F32), Var(ShapedArray((4,), np.float32))
    with pytest.raises(ProgramTypeError, match="f32\\[4\\].*f32\\[3\\]"):
        check_program(program_with([Eqn(unary_prims["sin"], [a], [b], {})], [a], [b]))


def test_weak_type_difference_is_allowed():
    a, b = Var(F32), Var(F32.update(weak_type=True))
    check_program(program_with([Eqn(unary_prims["sin"], [a], [b], {})], [a], [b]))


def test_operand_dtype_mismatch_rejected_by_rule():
    a, b, c = Var(F32), Var(F64), Var(F32)
    with pytest.raises(ProgramTypeError, match="rule rejected the operands.*one dtype"):
        check_program(program_with([Eqn(ADD, [a, b], [c], {})], [a, b], [c]))


def test_operand_shape_mismatch_rejected_by_rule():
    a, b, c = Var(F32), Var(ShapedArray((4,), np.float32)), Var(F32)
    with pytest.raises(ProgramTypeError, match=r"incompatible shapes \(3,\), \(4,\)"):
        check_program(program_with([Eqn(ADD, [a, b], [c], {})], [a, b], [c]))


def test_bad_params_rejected_by_rule():
    a, b = Var(ShapedArray((2, 3), np.float32)), Var(ShapedArray((7,), np.float32))
    with pytest.raises(ProgramTypeError, match="reshape"):
        check_program(program_with([Eqn(reshape_p, [a], [b], {"new_sizes": (7,)})], [a], [b]))
    c = Var(ShapedArray((2,), np.float32))
    with pytest.raises(ProgramTypeError, match="axes"):
        check_program(program_with([Eqn(reduce_prims["reduce_sum"], [a], [c], {"axes": (5,)})], [a], [c]))


def test_use_before_definition():
    a, b, c = Var(F32), Var(F32), Var(F32)
    eqns = [Eqn(MUL, [b, a], [c], {}), Eqn(unary_prims["sin"], [a], [b], {})]
    with pytest.raises(ProgramTypeError, match="used before it is defined"):
        check_program(program_with(eqns, [a], [c]))


def test_undefined_output():
    a, ghost = Var(F32), Var(F32)
    with pytest.raises(ProgramTypeError, match="outputs: variable .* used before it is defined"):
        check_program(program_with([], [a], [ghost]))


def test_variable_defined_twice():
    a, b = Var(F32), Var(F32)
    eqns = [Eqn(unary_prims["sin"], [a], [b], {}), Eqn(unary_prims["cos"], [a], [b], {})]
    with pytest.raises(ProgramTypeError, match="defined twice"):
        check_program(program_with(eqns, [a], [b]))
    with pytest.raises(ProgramTypeError, match="defined twice"):
        check_program(program_with([], [a, a], [a]))
    with pytest.raises(ProgramTypeError, match="defined twice"):
        check_program(program_with([Eqn(unary_prims["sin"], [a], [a], {})], [a], [a]))


def test_non_scalar_literal():
    a, b = Var(F32), Var(F32)
    bad = Literal(2.0, ShapedArray((), np.float32))
    bad.aval = F32  # bypass the constructor's own check
    with pytest.raises(ProgramTypeError, match="non-scalar literal"):
        check_program(program_with([Eqn(MUL, [a, bad], [b], {})], [a], [b]))


def test_operand_that_is_not_an_atom():
    a, b = Var(F32), Var(F32)
    with pytest.raises(ProgramTypeError, match="neither a Var nor a Literal"):
        check_program(program_with([Eqn(MUL, [a, np.float32(2)], [b], {})], [a], [b]))


def test_binder_that_is_not_a_var():
    a = Var(F32)
    with pytest.raises(ProgramTypeError, match="not a Var"):
        check_program(program_with([], [lit(1.0)], [a]))


def test_primitive_without_rule():
    a, b = Var(F32), Var(F32)
    with pytest.raises(ProgramTypeError, match="no abstract-eval rule"):
        check_program(program_with([Eqn(Primitive("mystery"), [a], [b], {})], [a], [b]))


def test_wrong_number_of_outputs():
    a, b, c = Var(F32), Var(F32), Var(F32)
    with pytest.raises(ProgramTypeError, match="1 outputs, equation binds 2"):
        check_program(program_with([Eqn(unary_prims["sin"], [a], [b, c], {})], [a], [b]))


def test_convert_element_type_checks_new_dtype():
    a, b = Var(F32), Var(ShapedArray((3,), np.int32))
    check_program(program_with([Eqn(convert_element_type_p, [a], [b], {"new_dtype": np.dtype(np.int32)})], [a], [b]))
    with pytest.raises(ProgramTypeError, match="i32\\[3\\].*derives i64\\[3\\]"):
        check_program(program_with([Eqn(convert_element_type_p, [a], [b], {"new_dtype": np.dtype(np.int64)})],
                                   [a], [b]))


def test_broken_subprogram_is_found():
    x, y = Var(F32), Var(F64)  # the sub-program's mul is typed f64 but derives f32
    sub = program_with([Eqn(MUL, [x, lit(2.0)], [y], {})], [x], [y])
    a, b = Var(F32), Var(F64)
    outer = program_with([Eqn(call_p, [a], [b], {"program": sub, "name": "inner"})], [a], [b])
    with pytest.raises(ProgramTypeError, match=r"\(mul\)"):
        check_program(outer)


def test_call_with_wrong_operands():
    program = make_jaxpr(lambda v: v * 2)(np.ones(3, np.float32))
    a, b = Var(F64), Var(F32)
    outer = program_with([Eqn(call_p, [a], [b], {"program": program, "name": "inner"})], [a], [b])
    with pytest.raises(ProgramTypeError, match="call of inner"):
        check_program(outer)


def test_constants_are_defined():
    c, a, b = Var(F32), Var(F32), Var(F32)
    check_program(program_with([Eqn(ADD, [a, c], [b], {})], [a], [b], [c], [np.ones(3, np.float32)]))
    with pytest.raises(ProgramTypeError, match="used before"):
        check_program(program_with([Eqn(ADD, [a, c], [b], {})], [a], [b]))


def test_checks_run_after_tracing_when_enabled():
    assert tracejit.config.enable_checks  # conftest turns them on
    calls = []
    import tracejit.api as api
    original = api.check_program
    api.check_program = lambda p: calls.append(p) or original(p)
    try:
        jit(lambda v: v + 1)(np.ones(2))
    finally:
        api.check_program = original
    assert len(calls) == 1 and isinstance(calls[0], Program)
