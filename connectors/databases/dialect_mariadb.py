"""sqlglot's MySQL dialect, fixed where its SQL does not run on MariaDB (10.11) as written.

The MySQL engine runs the SQL that sqlglot regenerates from the checked syntax tree
(``shared.sql``), so whatever this dialect writes is what the server executes. sqlglot has no
MariaDB dialect; its MySQL one rewrites constructs into MySQL 8 forms that MariaDB lacks. This
subclass keeps MySQL's tokenizer and parser (one grammar for the checks) and writes SQL that
both MariaDB 10.11 and MySQL 8 run wherever they share the syntax. Importing the module
registers the dialect under the name ``mariadb``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from sqlglot import TokenType, exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.generators.mysql import MySQLGenerator
from sqlglot.parsers.mysql import MySQLParser


class GroupConcat(exp.GroupConcat):
    """``GROUP_CONCAT(… LIMIT [offset,] n)``: MariaDB's own clause, which sqlglot cannot parse."""

    arg_types: ClassVar[dict[str, bool]] = {**exp.GroupConcat.arg_types, "limit": False}


class MariaDBParser(MySQLParser):
    # Calls read as written (exp.Anonymous), so they are written back as they came: sqlglot's
    # typed forms would run as something else. TO_DAYS(d) became (DATEDIFF(d, '0000-01-01') + 1),
    # which does not read back the same; CHR(65) became CHAR(65), a binary string on MariaDB.
    FUNCTIONS: ClassVar[dict[str, Any]] = {
        name: build for name, build in MySQLParser.FUNCTIONS.items() if name not in {"TO_DAYS", "CHR"}
    }
    FUNCTION_PARSERS: ClassVar[dict[str, Any]] = {
        **{name: parse for name, parse in MySQLParser.FUNCTION_PARSERS.items() if name != "CHR"},
        "GROUP_CONCAT": lambda self: self._parse_group_concat_with_limit(),
    }

    def _parse_group_concat_with_limit(self) -> exp.Expr | None:
        parsed = self._parse_group_concat()
        if not isinstance(parsed, exp.GroupConcat):
            return parsed
        this = parsed.this
        if isinstance(this, exp.Limit):  # GROUP_CONCAT(x ORDER BY y LIMIT n): the LIMIT went to the values
            limit: exp.Expr | None = this.copy()
            limit.set("this", None)  # type: ignore[union-attr]
            this = this.this
        elif self._match(TokenType.LIMIT):  # … SEPARATOR s LIMIT [offset,] n
            count = self._parse_number()
            if self._match(TokenType.COMMA):
                limit = exp.Limit(expression=self._parse_number(), offset=count)
            elif self._match(TokenType.OFFSET):
                limit = exp.Limit(expression=count, offset=self._parse_number())
            else:
                limit = exp.Limit(expression=count)
        else:
            return parsed
        return self.expression(GroupConcat(this=this, separator=parsed.args.get("separator"), limit=limit))


def _group_concat_sql(self: MySQLGenerator, expression: exp.GroupConcat) -> str:
    """The separator after ORDER BY and the LIMIT last, in MariaDB's order (sqlglot drops the LIMIT)."""
    separator = self.sql(expression, "separator") or "','"
    limit = expression.args.get("limit")
    tail = ""
    if isinstance(limit, exp.Limit):
        offset = self.sql(limit, "offset")
        tail = f" LIMIT {offset + ', ' if offset else ''}{self.sql(limit, 'expression')}"
    return f"GROUP_CONCAT({self.sql(expression, 'this')} SEPARATOR {separator}{tail})"


def _regexp_sql(self: MySQLGenerator, expression: exp.RegexpLike) -> str:
    """``a REGEXP b``: MariaDB has no REGEXP_LIKE(), sqlglot's MySQL form. With match flags only
    MySQL 8's REGEXP_LIKE(a, b, flags) can say it, and MariaDB refuses that call by name."""
    if expression.args.get("flag") is not None:
        return self.func("REGEXP_LIKE", expression.this, expression.expression, expression.args["flag"])
    return self.binary(expression, "REGEXP")


def _log_sql(self: MySQLGenerator, expression: exp.Log) -> str:
    """LOG10(x) and LOG2(x) as written: sqlglot's LOG(10, x) rounds differently on MariaDB."""
    base, value = expression.this, expression.expression
    if value is not None and base.is_int and base.name in ("2", "10"):
        return self.func(f"LOG{base.name}", value)
    return self.log_sql(expression)


def _json_extract_scalar_sql(self: MySQLGenerator, expression: exp.JSONExtractScalar) -> str:
    """``JSON_UNQUOTE(JSON_EXTRACT(…))``: MariaDB has no ``->>`` operator; both servers run this."""
    return self.func("JSON_UNQUOTE", self.func("JSON_EXTRACT", expression.this, expression.expression))


class MariaDBGenerator(MySQLGenerator):
    SUPPORTS_MEDIAN = True  # MEDIAN(x) OVER (…): sqlglot writes PERCENTILE_CONT(x, 0.5), which MariaDB lacks

    TRANSFORMS: ClassVar[dict[type[exp.Expr], Any]] = {
        **MySQLGenerator.TRANSFORMS,
        exp.GroupConcat: _group_concat_sql,
        GroupConcat: _group_concat_sql,
        exp.RegexpLike: _regexp_sql,
        exp.JSONExtractScalar: _json_extract_scalar_sql,
        exp.Log: _log_sql,
        exp.UtcDate: lambda self, e: "UTC_DATE()",  # sqlglot writes CURRENT_DATE AT TIME ZONE 'UTC'
    }


class MariaDB(MySQL):
    Parser = MariaDBParser
    Generator = MariaDBGenerator


DIALECT = "mariadb"  # the name the class above registers in sqlglot
