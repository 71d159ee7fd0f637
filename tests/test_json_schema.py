#!/usr/bin/env python3
"""test_json_schema.py — JSON Schemas as grammars (docs/grammar.md), end to end.

1. The official JSON-Schema-Test-Suite (draft 4, the subset in tests/data/json_schema_suite):
   every schema is converted with `ember grammar --json-schema`; a schema Ember refuses
   must be one this file expects it to refuse, with the keyword named; for every other
   schema each valid instance must follow the grammar (written with its keys in the
   schema's order, as Ember writes objects) and each invalid instance must not. Valid
   instances Ember never writes (undeclared properties where additionalProperties does not
   allow them) are counted apart, never silently.
2. Generated outputs: `ember batch --json-schema` on a model with random weights, at
   temperature 1, for schemas with nesting, enums, bounds, patterns, formats, $ref
   recursion, arrays and optional properties: every output is validated by Python's
   jsonschema (Debian's python3-jsonschema, with format checking), an independent
   validator.

Env: EMBER_BIN, EMBER_SOURCE_DIR, EMBER_TEST_TMP (set by ctest)."""
import json
import os
import subprocess
import sys
import tempfile

EMBER = os.environ.get("EMBER_BIN", "ember")
SRC = os.environ.get("EMBER_SOURCE_DIR", os.path.join(os.path.dirname(__file__), ".."))
TMP = os.environ.get("EMBER_TEST_TMP", tempfile.gettempdir())
SUITE = os.path.join(SRC, "tests", "data", "json_schema_suite")

# (file, group description) -> what Ember's refusal must name. Every other schema of the
# subset must be converted.
EXPECT_REFUSED = {
    ("uniqueItems.json", "uniqueItems validation"): "keyword 'uniqueItems'",
    ("not.json", "not"): "keyword 'not'",
    ("not.json", "not multiple types"): "keyword 'not'",
    ("not.json", "not more complex schema"): "keyword 'not'",
    ("not.json", "forbidden property"): "keyword 'not'",
    ("multipleOf.json", "by int"): "keyword 'multipleOf'",
    ("multipleOf.json", "by number"): "keyword 'multipleOf'",
    ("multipleOf.json", "by small number"): "keyword 'multipleOf'",
    ("ref.json", "remote ref, containing refs itself"): "only references within the schema",
    ("definitions.json", "valid definition"): "only references within the schema",
    ("definitions.json", "invalid definition"): "only references within the schema",
    ("oneOf.json", "oneOf"): "oneOf: Ember can only enforce oneOf whose branches have different types",
    ("oneOf.json", "oneOf with base schema"): "oneOf: Ember can only enforce oneOf whose branches have different types",
    ("additionalProperties.json", "additionalProperties being false does not allow other properties"):
        "keyword 'patternProperties'",
    ("ref.json", "escaped pointer ref"): "keyword 'tilda~field'",
    ("properties.json", "properties, patternProperties, additionalProperties interaction"):
        "keyword 'patternProperties'",
}


def run(args, **kw):
    return subprocess.run([EMBER] + args, capture_output=True, text=True, **kw)


def resolve(ref, root):
    node = root
    for part in ref.lstrip("#").split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


NEVER = object()  # what order() gives for an instance Ember never writes


def layers(schema, root, depth=0):
    """The schemas that apply together: schema, what its allOf holds, what $ref points to."""
    if depth > 50 or not isinstance(schema, dict):
        return []
    out = [schema]
    for sub in schema.get("allOf", []):
        out += layers(sub, root, depth + 1)
    if "$ref" in schema:
        try:
            out += layers(resolve(schema["$ref"], root), root, depth + 1)
        except (KeyError, IndexError, ValueError, TypeError):  # not within the schema: Ember refuses it
            pass
    return out


def order(data, schema, root, depth=0):
    """data with its objects' keys in the order Ember writes them (the declared properties
    first, in their order), or NEVER when Ember never writes it: a property the schema
    does not declare where it declares some and additionalProperties does not allow
    more (docs/grammar.md)."""
    ls = layers(schema, root)
    if depth > 50 or not ls:
        return data
    if isinstance(data, dict):
        props, extra, declares = {}, None, False
        for layer in ls:
            for k, v in layer.get("properties", {}).items():
                props.setdefault(k, []).append(v)
            declares |= any(k in layer for k in ("properties", "required", "additionalProperties"))
            extra = layer.get("additionalProperties", extra)
        for layer in ls:
            for k in layer.get("required", []):
                props.setdefault(k, [])
        if not declares:
            return data
        out = {}
        for k in props:
            if k in data:
                out[k] = data[k]
                for sub in props[k]:
                    out[k] = order(out[k], sub, root, depth + 1)
                    if out[k] is NEVER:
                        return NEVER
        for k in data:
            if k not in props:
                if extra is None or extra is False:
                    return NEVER
                out[k] = order(data[k], extra, root, depth + 1)
                if out[k] is NEVER:
                    return NEVER
        return out
    if isinstance(data, list):
        items = [layer["items"] for layer in ls if isinstance(layer.get("items"), dict)]
        out = list(data)
        for sub in items:
            out = [order(x, sub, root, depth + 1) for x in out]
            if any(x is NEVER for x in out):
                return NEVER
        return out
    return data


def suite():
    fails, counts = [], {"schemas": 0, "refused": 0, "valid": 0, "invalid": 0, "never_written": 0}
    seen_refused = set()
    for name in sorted(os.listdir(SUITE)):
        if not name.endswith(".json"):
            continue
        for group in json.load(open(os.path.join(SUITE, name), encoding="utf-8")):
            key = (name, group["description"])
            counts["schemas"] += 1
            path = os.path.join(TMP, "schema.json")
            json.dump(group["schema"], open(path, "w", encoding="utf-8"))
            files, expect, descr = [], [], []
            for i, t in enumerate(group["tests"]):
                data = order(t["data"], group["schema"], group["schema"]) if t["valid"] else t["data"]
                if data is NEVER:
                    counts["never_written"] += 1
                    print(f"left out: {key} / {t['description']}: {json.dumps(t['data'])}")
                    continue
                f = os.path.join(TMP, f"instance{i}.json")
                with open(f, "w", encoding="utf-8") as out:
                    out.write(json.dumps(data, ensure_ascii=False))
                files.append(f)
                expect.append(t["valid"])
                descr.append(t["description"])
            r = run(["grammar", "--json-schema", path, "--check"] + files)
            refused = r.returncode != 0 and "json schema:" in r.stderr
            if key in EXPECT_REFUSED and EXPECT_REFUSED[key] is not None:
                seen_refused.add(key)
                counts["refused"] += 1
                if not refused or EXPECT_REFUSED[key] not in r.stderr:
                    fails.append(f"{key}: expected a refusal naming {EXPECT_REFUSED[key]!r}, got "
                                 f"{r.stderr.strip() or 'a grammar'}")
                continue
            if refused:
                fails.append(f"{key}: refused: {r.stderr.strip()}")
                continue
            lines = r.stdout.splitlines()
            if len(lines) != len(files):
                fails.append(f"{key}: ember grammar said {r.stdout!r} {r.stderr!r}")
                continue
            for line, ok, d, f in zip(lines, expect, descr, files):
                counts["valid" if ok else "invalid"] += 1
                if line.endswith(": ok") != ok:
                    fails.append(f"{key} / {d}: {'valid' if ok else 'invalid'} instance {open(f).read()!r}: {line}")
    missing = [k for k, v in EXPECT_REFUSED.items() if v is not None and k not in seen_refused]
    fails += [f"{k}: expected in the suite subset, not found" for k in missing]
    print(f"suite: {counts['schemas']} schemas ({counts['refused']} refused as expected), "
          f"{counts['valid']} valid and {counts['invalid']} invalid instances checked, "
          f"{counts['never_written']} valid instances Ember never writes left out")
    return fails


# Schemas for generation: everything bounded, so that a model with random weights ends
# its outputs; together they use every supported keyword.
GENERATE = {
    "character": {
        "type": "object",
        "properties": {
            "say": {"type": "string", "maxLength": 40},
            "action": {"enum": ["give", "take", "attack", "flee"]},
            "target": {"type": "string", "pattern": "^[a-z]{2,8}( [a-z]{2,8})?$"},
            "count": {"type": "integer", "minimum": 1, "maximum": 99},
            "mood": {"type": ["string", "null"], "enum": ["calm", "angry", None]},
            "items": {"type": "array", "items": {"$ref": "#/$defs/item"}, "maxItems": 3},
        },
        "required": ["say", "action"],
        "additionalProperties": False,
        "$defs": {"item": {"type": "object", "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 12},
                                                            "qty": {"type": "integer", "minimum": 0, "maximum": 500}},
                           "required": ["name", "qty"]}},
    },
    "tree": {
        "$ref": "#/$defs/node",
        "$defs": {"node": {"type": "object",
                           "properties": {"v": {"type": "integer", "exclusiveMinimum": -10, "exclusiveMaximum": 10},
                                          "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
                           "required": ["v"], "additionalProperties": False}},
    },
    "formats": {
        "type": "object",
        "properties": {
            "day": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "time"},
            "when": {"type": "string", "format": "date-time"},
            "id": {"type": "string", "format": "uuid"},
            "mail": {"type": "string", "format": "email"},
            "p": {"type": "number", "exclusiveMinimum": 0, "maximum": 1.5},
            "t": {"type": "number", "minimum": -40.25, "exclusiveMaximum": 60.125},
            "const": {"const": {"a": [1, "x"]}},
        },
        "required": ["day", "at", "when", "id", "mail", "p", "t", "const"],
    },
    "mixed": {
        "type": "object",
        "allOf": [{"properties": {"kind": {"enum": ["a", "b", 3]}}, "required": ["kind"]}],
        "properties": {
            "kind": {"type": "string"},
            "val": {"oneOf": [{"type": "integer", "maximum": 5}, {"type": "string", "maxLength": 4},
                              {"type": "array", "prefixItems": [{"type": "boolean"}, {"type": "null"}],
                               "items": False}]},
            "tags": {"anyOf": [{"type": "array", "items": {"type": "string", "maxLength": 3}, "minItems": 1,
                                "maxItems": 2}, {"type": "null"}]},
        },
        "additionalProperties": {"type": "boolean"},
    },
}


def generate(model, prompts_path, fails):
    import jsonschema
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    total = 0
    for name, schema in GENERATE.items():
        spec_runs = [[], ["--ngram", "2", "--draft-k", "3"]] if name in ("character", "tree") else [[]]
        for spec in spec_runs:
            path = os.path.join(TMP, f"gen_{name}.json")
            json.dump(schema, open(path, "w", encoding="utf-8"))
            r = run(["batch", "-m", model, "-f", prompts_path, "--json-schema", path, "--temp", "1", "-n", "400",
                     "--max-seqs", "16", "--json"] + spec, timeout=600)
            if r.returncode != 0:
                fails.append(f"generate {name} {spec}: exit {r.returncode}: {r.stderr.strip()}")
                continue
            results = json.loads(r.stdout)["results"]
            validator = jsonschema.Draft202012Validator(schema, format_checker=checker)
            bad = 0
            for res in results:
                total += 1
                try:
                    validator.validate(json.loads(res["text"]))
                    if res["finish"] != "grammar":
                        raise ValueError(f"finish {res['finish']}")
                except (ValueError, jsonschema.ValidationError) as e:
                    bad += 1
                    if bad <= 3:
                        fails.append(f"generate {name} {spec}: {res['text']!r}: {str(e).splitlines()[0]}")
            print(f"generate {name}{' with n-gram speculation' if spec else ''}: {len(results)} outputs at "
                  f"temperature 1, {len(results) - bad} valid; e.g. {results[0]['text']}")
    return total


def main():
    try:
        import jsonschema  # noqa: F401  Debian's python3-jsonschema (scripts/setup.sh)
    except ImportError:
        if os.path.exists("/usr/bin/python3") and sys.executable != "/usr/bin/python3":
            os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
        print("test_json_schema: python3-jsonschema is missing (scripts/setup.sh installs it)")
        return 1
    fails = suite()
    model = os.path.join(TMP, "json_schema.gguf")
    r = run(["make-test-model", model, "--dim", "64", "--layers", "2", "--heads", "4", "--kv-heads", "2", "--ffn",
             "128", "--vocab", "512", "--ctx", "2048", "--seed", "21"])
    if r.returncode != 0:
        fails.append(f"make-test-model: {r.stderr.strip()}")
    else:
        prompts = os.path.join(TMP, "json_schema_prompts.txt")
        with open(prompts, "w", encoding="utf-8") as f:
            f.write("".join(f"The guard number {i} answers:\n" for i in range(48)))
        total = generate(model, prompts, fails)
        if total < 240:
            fails.append(f"only {total} outputs generated")
    for f in fails:
        print("FAIL:", f)
    print(f"test_json_schema: {'all checks passed' if not fails else f'{len(fails)} check(s) failed'}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
