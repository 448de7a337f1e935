"""A Redis cache that degrades instead of failing: pages answer while Redis is away.

The cache carries live progress and the login throttle. With Django's ``RedisCache`` a closed
Redis port turned every page that touches the cache (login, the dashboard, the queues) into a
500. :class:`DegradingRedisCache` answers from a per-process local-memory cache while Redis is
unreachable, and tries Redis again after :data:`RETRY_AFTER` seconds, so a dead server costs one
short connect timeout per process per retry period, not one per call. The throttle keeps working
meanwhile, per process (a lock-out then holds in the process that counted it).
"""

from __future__ import annotations

import logging
import time

from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

RETRY_AFTER = 10.0  # seconds before trying an unreachable Redis again
OPERATIONS = ("add", "get", "set", "touch", "delete", "get_many", "has_key", "incr", "set_many",
              "delete_many", "clear")


class DegradingRedisCache(RedisCache):
    def __init__(self, server, params):
        super().__init__(server, params)
        self._local = LocMemCache(f"blindspot-degraded-{id(self)}", {"TIMEOUT": params.get("TIMEOUT", 300)})
        self._down_until = 0.0

    @property
    def degraded(self) -> bool:
        """True while Redis is treated as unreachable."""
        return time.monotonic() < self._down_until


def _degrading(name: str):
    redis_op = getattr(RedisCache, name)

    def operation(self, *args, **kwargs):
        if not self.degraded:
            try:
                return redis_op(self, *args, **kwargs)
            except RedisError as exc:
                self._down_until = time.monotonic() + RETRY_AFTER
                logger.warning("Redis cache unreachable (%s): using this process's memory for %.0f s",
                               type(exc).__name__, RETRY_AFTER)
        return getattr(self._local, name)(*args, **kwargs)

    operation.__name__ = name
    operation.__doc__ = f"``{name}`` on Redis, or on this process's memory while Redis is unreachable."
    return operation


for _name in OPERATIONS:
    setattr(DegradingRedisCache, _name, _degrading(_name))
