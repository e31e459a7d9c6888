"""The benchmark's floor: authenticate the bearer token, lock one row, update it, in one transaction."""

from django.db import connection, transaction
from rest_framework.response import Response
from rest_framework.views import APIView

TABLE = "bench_floor"


def ensure_table() -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (id integer PRIMARY KEY, n bigint NOT NULL)")
        cursor.execute(f"INSERT INTO {TABLE} (id, n) SELECT g, 0 FROM generate_series(1, 64) g ON CONFLICT DO NOTHING")


class FloorView(APIView):
    """What every tool call does at the least: the same authentication, one locked row, one update."""

    def post(self, request):
        if request.auth is None:
            return Response({"ok": False}, status=401)
        row = int(request.data.get("row", 1)) if isinstance(request.data, dict) else 1
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"SELECT n FROM {TABLE} WHERE id = %s FOR UPDATE", [row])
            cursor.execute(f"UPDATE {TABLE} SET n = n + 1 WHERE id = %s", [row])
        return Response({"ok": True, "data": {}})
