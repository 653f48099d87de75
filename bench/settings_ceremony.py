"""Lines of settings ceremony of the run kinds: what states a kind's settings again after its
Settings dataclass. Counted per kind class (by ast line spans):
  resolved() + from_settings() + inputs() (whole methods, decorators included)
  + __init__'s signature lines (def line to the body's first statement, docstring excluded)
  + __init__ statements that only copy arguments (`self.a = a`, `self.a, self.b = a, b`,
    `self.a = settings.a`).
The Settings dataclass itself is the one statement of the fields, not ceremony."""
import ast
import sys
from pathlib import Path

root = Path(sys.argv[1]) / "spatialprobe"
only = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else None
WHOLE = ("resolved", "from_settings", "inputs")

def plain(value, params):
    if isinstance(value, ast.Name):
        return value.id in params
    if isinstance(value, ast.Attribute):
        return plain(value.value, params)
    if isinstance(value, ast.Tuple):
        return all(plain(v, params) for v in value.elts)
    return False

def copies(stmt, params):
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return False
    t = stmt.targets[0]
    targets = t.elts if isinstance(t, ast.Tuple) else [t]
    return all(isinstance(x, ast.Attribute) and getattr(x.value, "id", "") == "self" for x in targets) \
        and plain(stmt.value, params)

total = 0
for path in sorted(root.rglob("*.py")):
    tree = ast.parse(path.read_text())
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        bases = [getattr(b, "id", getattr(b, "attr", "")) for b in cls.bases]
        if not any(b.endswith("Run") or b == "RunKind" for b in bases) or cls.name == "RunKind":
            continue
        if only and cls.name not in only:
            continue
        n = 0
        for node in cls.body:
            if not isinstance(node, ast.FunctionDef):
                continue
            if node.name in WHOLE:
                start = min([d.lineno for d in node.decorator_list] + [node.lineno])
                n += node.end_lineno - start + 1
            elif node.name == "__init__":
                body = node.body
                if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
                    body = body[1:]
                params = {a.arg for a in node.args.args + node.args.kwonlyargs} - {"self"}
                n += (body[0].lineno - node.lineno) if body else 1
                n += sum(s.end_lineno - s.lineno + 1 for s in body if copies(s, params))
        total += n
        print(f"{path.relative_to(root.parent)}:{cls.name}: {n}")
print("ceremony lines", total)
