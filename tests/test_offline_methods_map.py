"""Looking up an offline method imports only the module that registers it, and the name -> module map
says where every built-in method really is (so it cannot drift from the modules' decorators)."""

from __future__ import annotations

import json
import subprocess
import sys

from bqas.offline import methods


def test_the_map_names_every_registered_method_and_its_module() -> None:
    methods.load_builtin_methods()
    registered = {name: fn.__module__ for name, fn in methods._REGISTRY.items()}
    builtin = {name: module for name, module in registered.items() if module.startswith("bqas.offline.")}
    assert builtin == methods.BUILTIN_METHOD_MODULES


def _fresh(code: str) -> dict[str, bool]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    result: dict[str, bool] = json.loads(out.stdout)
    return result


def test_the_safety_gate_does_not_import_numpy_or_the_grounding_modules() -> None:
    seen = _fresh(
        "import json, sys\n"
        "from bqas.offline.methods import get_method\n"
        "get_method('safety_gate')\n"
        "print(json.dumps({m: m in sys.modules for m in ('numpy', 'bqas.offline.grounding', 'bqas.offline.safety')}))"
    )
    assert seen == {"numpy": False, "bqas.offline.grounding": False, "bqas.offline.safety": True}


def test_an_unknown_name_still_loads_everything_and_names_what_is_known() -> None:
    try:
        methods.get_method("no_such_method")
    except KeyError as exc:
        assert "claim_grounding" in str(exc) and "safety_gate" in str(exc)
    else:
        raise AssertionError("an unknown method was found")
