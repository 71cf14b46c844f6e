"""The expression language: text -> tree (parser), the tree and its printer (tree), one function table
(functions), one evaluator for every number type (evaluate), points (points, sources).

Re-exported here so that ``from gradcli.expression import parse, Node, ...`` reads as the language's API.
Everything in this package is stdlib-only at import time (``gradcli --help`` imports it).
"""

from gradcli.expression.parser import (MAX_DEPTH, MAX_LENGTH, MAX_NODES, RESERVED, Token, check_constants,  # noqa: F401
                                       check_variable_name, parse, tokenize)
from gradcli.expression.tree import (CONSTANTS, Add, Call, Const, Expression, Mul, Neg, Node, Num, Pow,  # noqa: F401
                                     Var, children, is_constant, to_text, walk)
from gradcli.expression.functions import ARITIES as FUNCTIONS  # noqa: F401,E402
