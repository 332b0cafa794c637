"""The IR (Var, Literal, Eqn, Program) and its jaxpr-style text form: golden
texts of small programs, constants, nested calls and sub-program params."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import jit, make_jaxpr
from tracejit.core.avals import ShapedArray
from tracejit.core.ir import Eqn, Literal, Program, Var, count_eqns, subprograms
from tracejit.core.primitive import Primitive, abstract_eval_rules
from tracejit.ops.elementwise import binary_prims, unary_prims


def relu(x):
    return np.maximum(x, 0)


def text(fun, *args):
    return str(make_jaxpr(fun)(*args))


def test_relu_one_line_f64_and_f32():
    x = np.array([-1.0, 0.0, 1.0])
    assert text(relu, x) == "{ lambda ; a:f64[3]. let b:f64[3] = max a 0.0 in (b,) }"
    assert text(relu, x.astype(np.float32)) == "{ lambda ; a:f32[3]. let b:f32[3] = max a 0.0 in (b,) }"
    assert repr(make_jaxpr(relu)(x)) == str(make_jaxpr(relu)(x))
    # The same text whether relu is written with tracejit.numpy or plain NumPy.
    assert text(lambda a: jnp.maximum(a, 0), x) == text(relu, x)


def test_multi_line_form():
    got = text(lambda x, y: (x @ y, x.sum(axis=1)), np.ones((2, 3), np.float32), np.ones((3, 4), np.float32))
    assert got == """{ lambda ; a:f32[2,3] b:f32[3,4]. let
    c:f32[2,4] = dot_general[dimension_numbers=(((1,), (0,)), ((), ()))] a b
    d:f32[2] = reduce_sum[axes=(1,)] a
  in (c, d) }"""


def test_closed_over_array_is_a_constant():
    c = np.arange(3.0)
    got = text(lambda x: x * c + 1.0, np.ones(3))
    assert got == """{ lambda a:f64[3] ; b:f64[3]. let
    c:f64[3] = mul b a
    d:f64[3] = add c 1.0
  in (d,) }"""
    program = make_jaxpr(lambda x: x * c + 1.0)(np.ones(3))
    assert len(program.const_vars) == 1 and program.const_values[0] is c
    # The same array used twice is one constant.
    program = make_jaxpr(lambda x: x * c + c)(np.ones(3))
    assert len(program.const_vars) == 1


def test_nested_jit_inline_false_prints_call_with_subprogram():
    inner = jit(lambda y: np.sin(y) * 2, inline=False)
    got = text(lambda x: inner(x) + 1.0, np.array([1.0, 2.0, 3.0]))
    assert got == """{ lambda ; a:f64[3]. let
    b:f64[3] = call[program={ lambda ; c:f64[3]. let
          d:f64[3] = sin c
          e:f64[3] = mul d 2.0
        in (e,) } name=<lambda>] a
    f:f64[3] = add b 1.0
  in (f,) }"""


def test_nested_jit_inlines_by_default():
    inner = jit(lambda y: np.sin(y) * 2)
    got = text(lambda x: inner(x) + 1.0, np.array([1.0, 2.0, 3.0]))
    assert got == """{ lambda ; a:f64[3]. let
    b:f64[3] = sin a
    c:f64[3] = mul b 2.0
    d:f64[3] = add c 1.0
  in (d,) }"""


def test_nested_call_with_closed_over_constant():
    c = np.arange(3.0)
    inner = jit(lambda y: y + c, inline=False)
    program = make_jaxpr(lambda x: inner(x) * 2.0)(np.ones(3))
    (call, mul) = program.eqns
    assert call.primitive.name == "call" and mul.primitive.name == "mul"
    sub = call.params["program"]
    assert len(sub.const_vars) == 1 and len(call.inputs) == 2  # the constant is passed in
    assert list(subprograms(call)) == [sub]
    assert count_eqns(program) == {"call": 1, "add": 1, "mul": 1}
    tracejit.check_program(program)
    assert np.array_equal(jit(lambda x: inner(x) * 2.0)(np.ones(3)), (np.ones(3) + c) * 2)


@pytest.mark.parametrize("fun,args,expected", [
    (lambda x: x.astype(np.int32) + 1, (np.ones(3),),
     "{ lambda ; a:f64[3]. let\n    b:i32[3] = convert_element_type[new_dtype=int32 weak_type=False] a\n"
     "    c:i32[3] = add b 1\n  in (c,) }"),
    (lambda x: x[::-1, 1:], (np.ones((3, 4)),),
     "{ lambda ; a:f64[3,4]. let\n    b:f64[3,4] = rev[dimensions=(0,)] a\n"
     "    c:f64[3,3] = slice[start_indices=(0, 1) limit_indices=(3, 4) strides=(1, 1)] b\n  in (c,) }"),
    (lambda x: np.where(x > 0, x, 0.0), (np.ones(3),),
     "{ lambda ; a:f64[3]. let\n    b:bool[3] = gt a 0.0\n    c:f64[3] = select_n b 0.0 a\n  in (c,) }"),
    (lambda x: (x > 0) & True, (np.ones(3),),
     "{ lambda ; a:f64[3]. let\n    b:bool[3] = gt a 0.0\n    c:bool[3] = and b True\n  in (c,) }"),
    (lambda x: x + 1j, (np.ones(3, np.float32),),
     "{ lambda ; a:f32[3]. let\n    b:c64[3] = convert_element_type[new_dtype=complex64 weak_type=False] a\n"
     "    c:c64[3] = add b 1j\n  in (c,) }"),
    (lambda x: x, (np.ones(3),), "{ lambda ; a:f64[3]. let  in (a,) }"),
    (lambda x: (x, 2.0), (np.ones(2, np.int8),), "{ lambda ; a:i8[2]. let  in (a, 2.0) }"),
    (lambda: jnp.arange(3), (), "{ lambda ; . let a:i64[3] = iota[dtype=int64 shape=(3,) dimension=0] in (a,) }"),
    (lambda x, y: x + y, (1, 2.0),
     "{ lambda ; a:i64[] b:f64[]. let\n    c:f64[] = convert_element_type[new_dtype=float64 weak_type=True] a\n"
     "    d:f64[] = add c b\n  in (d,) }"),
    (lambda x: jnp.sum(x, axis=0, keepdims=True), (np.ones((2, 3), np.uint8),),
     "{ lambda ; a:u8[2,3]. let\n    b:u64[2,3] = convert_element_type[new_dtype=uint64 weak_type=False] a\n"
     "    c:u64[3] = reduce_sum[axes=(0,)] b\n    d:u64[1,3] = reshape[new_sizes=(1, 3)] c\n  in (d,) }"),
], ids=["astype", "slice_rev", "where", "bool_literal", "complex_literal", "identity", "literal_output", "iota",
        "weak_scalars", "sum_keepdims"])
def test_golden_programs(fun, args, expected):
    assert text(fun, *args) == expected


def test_many_variables_get_jax_style_names():
    def chain(x):
        for _ in range(30):
            x = x + 1.0
        return x
    tracejit.config.update("autograph", False)     # 30 separate adds (autograph would make a loop)
    try:
        program = make_jaxpr(chain)(np.float32(0))
    finally:
        tracejit.config.update("autograph", True)
    lines = str(program).splitlines()
    names = [line.split(":")[0].strip() for line in lines[1:-1]]
    # a..z, then two letters that skip a leading 'a' (ba, bb, ...), as JAX does.
    assert names[:3] == ["b", "c", "d"] and names[24] == "z" and names[25:] == ["ba", "bb", "bc", "bd", "be"]


def test_literal_and_var_basics():
    lit = Literal(2, ShapedArray((), np.float32))
    assert lit.val.dtype == np.float32 and repr(lit) == "Literal(np.float32(2.0))"
    with pytest.raises(ValueError, match="scalar"):
        Literal(np.ones(2), ShapedArray((2,), np.float64))
    v = Var(ShapedArray((2,), np.int32))
    assert repr(v) == "Var(i32[2])"
    with pytest.raises(ValueError, match="exactly one value"):
        Program([v], [], [], [], [v])


def _mul_program(dtype=np.float32):
    a = Var(ShapedArray((3,), dtype))
    b = Var(ShapedArray((3,), dtype))
    eqn = Eqn(binary_prims["mul"], [a, Literal(2.0, ShapedArray((), dtype))], [b], {})
    return Program([], [], [a], [eqn], [b])


def test_hand_built_program_prints_and_runs():
    program = _mul_program()
    assert str(program) == "{ lambda ; a:f32[3]. let b:f32[3] = mul a 2.0 in (b,) }"
    assert program.in_avals == [ShapedArray((3,), np.float32)]
    assert program.out_avals == [ShapedArray((3,), np.float32)]
    tracejit.check_program(program)
    from tracejit.backends.reference import interpret
    from tracejit.core.interpret import eval_program
    x = np.arange(3, dtype=np.float32)
    assert np.array_equal(interpret(program, [], [x])[0], x * 2)
    assert np.array_equal(eval_program(program, [], [x])[0], x * 2)
    with pytest.raises(TypeError, match="takes 1 arguments"):
        eval_program(program, [], [x, x])
    renamed = program.replace(outputs=[program.in_vars[0]])
    assert str(renamed) == "{ lambda ; a:f32[3]. let b:f32[3] = mul a 2.0 in (a,) }"
    assert program.eqns[0].replace(params={"x": 1}).params == {"x": 1}


# A primitive with a tuple of sub-programs (like cond's branches), registered only for these tests.
_branches_p = Primitive("test_branches")
abstract_eval_rules[_branches_p] = lambda *avals, branches: branches[0].out_avals


def test_tuple_of_subprograms_in_params():
    a = Var(ShapedArray((3,), np.float32))
    out = Var(ShapedArray((3,), np.float32))
    p1, p2 = _mul_program(), _mul_program()
    eqn = Eqn(_branches_p, [a], [out], {"branches": (p1, p2)})
    program = Program([], [], [a], [eqn], [out])
    assert list(subprograms(eqn)) == [p1, p2]
    assert str(program) == """{ lambda ; a:f32[3]. let
    b:f32[3] = test_branches[branches=(
      { lambda ; c:f32[3]. let d:f32[3] = mul c 2.0 in (d,) }
      { lambda ; e:f32[3]. let f:f32[3] = mul e 2.0 in (f,) }
    )] a
  in (b,) }"""
    tracejit.check_program(program)
    assert count_eqns(program) == {"test_branches": 1, "mul": 2}


def test_eqn_with_no_outputs_and_dtype_params():
    a = Var(ShapedArray((), np.float64))
    eqn = Eqn(unary_prims["sin"], [a], [], {"dtype": np.dtype(np.int16), "kind": np.float32})
    program = Program([], [], [a], [eqn], [a])
    assert "_ = sin[dtype=int16 kind=float32] a" in str(program)
