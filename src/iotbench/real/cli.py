"""`iotbench serve` and `iotbench client`: the stacks on real sockets.

Called by iotbench.cli with its parsed arguments; user errors raise
UserError (one line, exit code 2), never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys

from iotbench.apps.coap_resources import REAL_RESOURCES
from iotbench.proto.coap.codec import Message
from iotbench.real.coap import RealModeError, coap_request, describe, serve_coap
from iotbench.real.driver import AsyncDatagramDriver
from iotbench.scenarios import UserError

EXIT_OK, EXIT_FAILED = 0, 1


def serve(args: argparse.Namespace) -> int:
    def ready(driver: AsyncDatagramDriver) -> None:
        host, port = driver.transport.get_extra_info("sockname")[:2]
        shown = f"[{host}]" if ":" in host else host
        lines = [f"iotbench: CoAP server listening on coap://{shown}:{port}"]
        lines += [f"  {path:<18} {what}" for path, what in REAL_RESOURCES.items()]
        lines.append(f"  {'/.well-known/core':<18} the list of resources (RFC 6690)")
        print("\n".join(lines), file=sys.stderr, flush=True)

    async def main() -> None:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError):  # platforms without signal handlers
            loop.add_signal_handler(signal.SIGTERM, task.cancel)
        await serve_coap(
            args.host,
            args.port,
            object_size_bytes=args.object_size,
            observe_interval_s=args.observe_interval,
            on_ready=ready,
        )

    try:
        asyncio.run(main())
    except OSError as exc:
        message = f"cannot serve on {args.host} port {args.port}: {exc.strerror or exc}"
        raise UserError(message) from None
    except (KeyboardInterrupt, asyncio.CancelledError):
        pass
    print("iotbench: CoAP server stopped", file=sys.stderr)
    return EXIT_OK


def client(args: argparse.Namespace) -> int:
    payload = (args.payload or "").encode("utf-8")

    def show(msg: Message) -> None:
        print(describe(msg), file=sys.stderr)
        _print_payload(msg)

    try:
        result = asyncio.run(
            coap_request(
                args.uri,
                args.method,
                payload=payload,
                content_format=args.content_format,
                confirmable=not args.non,
                observe=args.observe,
                timeout_s=args.timeout,
                on_update=show,
            )
        )
    except RealModeError as exc:
        raise UserError(str(exc)) from None
    except KeyboardInterrupt:
        return EXIT_FAILED
    if result.response is None:
        print(f"iotbench: no response ({result.failure})", file=sys.stderr)
        return EXIT_FAILED
    msg = result.response
    print(
        f"{describe(msg)}; rtt {1000 * result.rtt_s:.1f} ms, "
        f"{result.transmissions} transmission(s)",
        file=sys.stderr,
    )
    if not args.observe:
        _print_payload(msg)
    elif result.notifications:
        print(f"{len(result.notifications)} notification(s)", file=sys.stderr)
    return EXIT_OK if result.ok else EXIT_FAILED


def _print_payload(msg: Message) -> None:
    if not msg.payload:
        return
    text = msg.payload.decode("utf-8", errors="replace")
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()
