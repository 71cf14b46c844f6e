"""--rule in a generated program: each rule as the ``tf.custom_gradient`` function gradcli's tape uses (its
value is the body's, its gradient the rule's formulas times the upstream gradient), defined before the
functions that call it; the SymPy and fd programs write the rule's body instead (the same function)."""

from __future__ import annotations

from gradcli.expression.tree import Node, Rule, RuleCall, inline_rules, walk
from gradcli.programs.common import code_names, rule_function, target_code, tf_code


def rules_in(trees: list[Node]) -> list[Rule]:
    """The rules the trees call, each after the rules its own body and formulas call."""
    found: list[Rule] = []

    def visit(tree: Node) -> None:
        for node in walk(tree):
            if isinstance(node, RuleCall) and node.rule not in found:
                for inner in (node.rule.body, *node.rule.derivatives):
                    visit(inner)
                if node.rule not in found:
                    found.append(node.rule)

    for tree in trees:
        visit(tree)
    return found


def rule_names(trees: list[Node]) -> list[str]:
    """The program's names of those functions (for code_names to keep variables clear of them)."""
    return [rule_function(r) for r in rules_in(trees)]


def rule_definitions(trees: list[Node]) -> list[str]:
    """The lines defining every rule the trees call (none without rules)."""
    lines: list[str] = []
    for rule in rules_in(trees):
        names = code_names(list(rule.params), taken=["value", "gradient", "upstream", *rule_names(trees)])
        params = ", ".join(names[p] for p in rule.params)
        grads = ", ".join(f"upstream * ({tf_code(d, names)})" for d in rule.derivatives)
        lines += ["", "", f"# --rule {rule.text}" if rule.text else f"# --rule {rule.name}",
                  "@tf.custom_gradient", f"def {rule_function(rule)}({params}):",
                  f"    value = {target_code(rule.body, names)}", "",
                  "    def gradient(upstream):", f"        return [{grads}]", "",
                  "    return value, gradient"]
    return lines + ["", ""] if lines else []


def without_rules(trees: list[Node]) -> list[Node]:
    """The trees with each rule call written as the rule's body (for SymPy's and fd's programs)."""
    return [inline_rules(t) for t in trees]
