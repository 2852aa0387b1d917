"""PMap behaves like an immutable dict, whatever the operations."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kraftwerk.image.pmap import PMap

ops = st.lists(
    st.tuples(st.sampled_from(["set", "remove", "update"]), st.integers(-300, 300), st.integers()),
    max_size=200,
)


@settings(max_examples=200, deadline=None)
@given(ops)
def test_matches_dict(operations: list[tuple[str, int, int]]) -> None:
    model: dict[int, int] = {}
    pm: PMap[int, int] = PMap()
    history = []
    for op, key, value in operations:
        history.append((pm, dict(model)))
        if op == "set":
            pm = pm.set(key, value)
            model[key] = value
        elif op == "remove":
            pm = pm.remove(key)
            model.pop(key, None)
        else:
            pm = pm.update({key: value, key + 1: value}, removed=[key - 1])
            model.pop(key - 1, None)
            model.update({key: value, key + 1: value})
        assert len(pm) == len(model)
    assert dict(pm.items()) == model and pm == model and PMap(model) == pm
    for old, snapshot in history:  # persistence: earlier versions never change
        assert dict(old.items()) == snapshot


def test_many_keys_and_collisions() -> None:
    pm: PMap[object, int] = PMap((i, i) for i in range(5000))
    pm = pm.set(-1, 1).set(-2, 2)  # hash(-1) == hash(-2) in CPython
    assert pm[-1] == 1 and pm[-2] == 2 and len(pm) == 5002
    assert pm.remove(-1).get(-2) == 2 and -1 not in pm.remove(-1)
    assert pm.remove("absent") is pm
