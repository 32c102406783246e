"""`hrr mcp` stops a call that outlives its --call-timeout.

usage: timeout.py ARCHIVE LIMIT_S HRR ARG...

Starts `HRR ARG...` (an `hrr … mcp --call-timeout LIMIT_S` whose replays
hang) with the official Python SDK and triages ARCHIVE with a progress
token: the status lines must arrive while the replay hangs, and the answer
must be a tool error saying the call was stopped, soon after the limit.
Any failed check raises; success prints `ok`.
"""

import asyncio
import os
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def run(archive, limit_s, hrr, args):
    server = StdioServerParameters(command=hrr, args=args, env=dict(os.environ))
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            status = []

            async def progress(done, total, message):
                status.append(message)

            start = time.monotonic()
            result = await session.call_tool("triage", {"archive": archive}, progress_callback=progress)
            took = time.monotonic() - start
            text = "\n".join(c.text for c in result.content if c.type == "text")
            assert result.is_error, f"a stopped call is a tool error, got {text[:300]}"
            assert text.startswith("error:") and "ran longer than" in text, text
            assert limit_s <= took < limit_s + 15, f"answered after {took:.1f}s"
            assert any("replay" in m for m in status), f"the replay's status lines came: {status}"

            # The server survives a stopped call.
            again = await session.call_tool("archive_info", {"archive": archive})
            assert not again.is_error, "the next call is served"


if __name__ == "__main__":
    archive, limit_s, hrr, *args = sys.argv[1:]
    asyncio.run(asyncio.wait_for(run(archive, float(limit_s), hrr, args), timeout=60))
    print("ok")
