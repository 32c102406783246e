"""An independent MCP client for `hrr mcp`: the official Python SDK.

usage: client.py HRR EXAMPLE_ROOT NOT_AN_ARCHIVE PASS_LOG

Starts `HRR mcp` over stdio (in this process's environment), lists the
tools and calls them on the example archive, validating every structured
result against the tool's own output schema. Any failed check raises, so
the exit status says whether the server behaves; the last line printed on
success is `ok: <n> checks`.
"""

import asyncio
import os
import sys

import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

TOOLS = {"triage", "archive_info", "archive_events", "preflight", "classify"}
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def text_of(result):
    return "\n".join(c.text for c in result.content if c.type == "text")


async def call(session, schemas, name, arguments, progress=None):
    """Calls a tool that must succeed; returns its validated structured result."""
    result = await session.call_tool(name, arguments, progress_callback=progress)
    check(not result.is_error, f"{name} {arguments}: a tool error: {text_of(result)}")
    data = result.structured_content
    check(isinstance(data, dict), f"{name}: the structured result is an object")
    errors = [e.message for e in jsonschema.Draft202012Validator(schemas[name]).iter_errors(data)]
    check(not errors, f"{name}: the result does not match the output schema: {errors[:3]}")
    return data


async def run(hrr, root, not_archive, pass_log):
    process = os.path.join(root, "pid-4243")
    server = StdioServerParameters(command=hrr, args=["mcp"], env=dict(os.environ))
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()

            tools = (await session.list_tools()).tools
            check({t.name for t in tools} == TOOLS, f"the five tools, got {[t.name for t in tools]}")
            schemas = {}
            for t in tools:
                check(t.input_schema.get("type") == "object", f"{t.name}: an input schema")
                check("archive" in t.input_schema.get("properties", {}), f"{t.name}: takes `archive`")
                check(t.output_schema and t.output_schema.get("type") == "object",
                      f"{t.name}: an output schema")
                jsonschema.Draft202012Validator.check_schema(t.output_schema)
                schemas[t.name] = t.output_schema
            classify_input = next(t for t in tools if t.name == "classify").input_schema
            check(classify_input.get("required") == ["logs"], "classify requires only `logs`")

            info = await call(session, schemas, "archive_info", {"archive": root})
            check(info["kind"] == "root", "the example root holds several processes")
            check(info["chosen"] == 4243, f"triage would pick pid 4243, not {info['chosen']}")
            info = await call(session, schemas, "archive_info", {"archive": process})
            check(info["kind"] == "process" and info["pid"] == 4243, "a process summary")
            check(any(k["name"] == "crash_oob" for k in info["kernels"]), "crash_oob is listed")

            status = []

            async def progress(done, total, message):
                status.append((done, message))

            finding = await call(session, schemas, "triage",
                                 {"archive": root, "no_replay": True}, progress)
            check(finding["archive"].endswith("pid-4243"), f"triaged {finding['archive']}")
            check(finding["fault_class"] == "metadata_only", "no replay was run")
            check(any("crash_oob" in n for n in finding["notes"]), "the notes name crash_oob")
            check(status, "triage sent progress notifications")
            check([d for d, _ in status] == list(range(1, len(status) + 1)),
                  f"progress counts the lines: {status}")
            check(all(m.startswith("[hrr]") for _, m in status), f"status lines: {status}")

            every = await call(session, schemas, "triage",
                               {"archive": root, "no_replay": True, "all": True})
            pids = sorted(f["archive"].rsplit("-", 1)[1] for f in every["findings"])
            check(pids == ["4242", "4243"], f"one finding per process, got {pids}")

            bad = await session.call_tool("archive_info", {"archive": not_archive})
            check(bad.is_error, "a non-archive is a tool error")
            check(text_of(bad).startswith("error:") and "no process archive" in text_of(bad),
                  f"the tool error carries hrr's error line: {text_of(bad)!r}")

            events = await call(session, schemas, "archive_events",
                                {"archive": process, "limit": 2})
            check([e["seq"] for e in events["events"]] == [0, 1], f"limit 2: {events}")
            events = await call(session, schemas, "archive_events", {"archive": process})
            seqs = [e["seq"] for e in events["events"]]
            check(len(seqs) > 2 and seqs == sorted(seqs), f"all events by default: {seqs}")
            events = await call(session, schemas, "archive_events",
                                {"archive": process, "from": 1, "limit": 1, "api": "hipMalloc"})
            check([e["api"] for e in events["events"]] == ["hipMalloc"], f"from/api: {events}")

            report = await call(session, schemas, "preflight", {"archive": process})
            check(report["capture"]["metadata"] is True, "the capture's metadata was read")

            classified = await call(session, schemas, "classify", {"logs": [pass_log]})
            check(classified["outcome"] == "PASS", "the recorded passing replay is a PASS")


if __name__ == "__main__":
    asyncio.run(asyncio.wait_for(run(*sys.argv[1:5]), timeout=120))
    print(f"ok: {checks} checks")
