-- triage: decode an HRR capture archive, check this host can replay it,
-- replay it, and report which kernel faulted and what to do next.
--
-- Usage: hrr triage <archive> [--replay auto|native|docker] [--no-replay]
--          [--no-sync] [--gpu N] [--image IMG] [--timeout DUR]
--          [--workdir DIR] [-o FILE] [--format markdown|json] [--all]
--          [--yes] [--exit-code]
--
-- This is the workflow embedded in hrr, a preset: the chunk returns a table
-- of steps (plan, preflight, replay, classify, render, exit_code), the
-- per-process triage_one and the whole run. A site's triage.lua in a
-- scripts directory (scripts.path, .hrr/scripts/, ~/.config/hrr/scripts/)
-- replaces it; it extends this one by taking the table from
-- hrr.workflow.embedded("triage"), replacing a step and returning it.
-- `hrr --list -v` shows which one runs; `hrr triage --print-workflow`
-- prints this file.

local triage = {}

-- --exit-code: one code per outcome, for CI (DESIGN §3.1).
local OUTCOME_EXIT = { PASS = 0, FAIL = 10, MAF = 11, ABORT = 12, HANG = 13, UNKNOWN = 14 }
local METADATA_ONLY_EXIT = 15

-- Why a run exits early: the code and the line to print.
local Stop = {}
local function stop(code, message)
  error(setmetatable({ code = code, message = message }, Stop), 0)
end

-- The last part of a path: the `pid-*` directory's name.
local function basename(path)
  return path:match("[^/\\]+$")
end

-- Decides how to replay: docker, native, or metadata-only with the reason.
-- Locating (or building once) the player happens here, so BUILD-NEEDED is
-- known. Returns {mode =, player =, why =}.
function triage.plan(opts)
  if opts.no_replay then
    return { mode = "metadata", why = "--no-replay was given" }
  end
  local mode = hrr.config.get("replay.mode")
  local image = hrr.config.get("docker.image")
  if mode == "docker" or (mode == "auto" and image) then
    if not image then
      stop(1, "docker replay needs an image: pass --image IMG or set docker.image")
    end
    local player
    if hrr.config.get("docker.mount_clr") then
      local err
      player, err = hrr.playback.locate({ build = true })
      if not player then stop(1, err) end
    end
    return { mode = "docker", player = player }
  end
  local kfd = hrr.config.get("replay.kfd")
  if kfd ~= "" and not hrr.fs.readable(kfd) then
    local why = "no GPU device: " .. kfd .. " is not readable on this host"
    if mode == "native" then stop(1, why .. " (run on a host with an AMD GPU, or use --no-replay)") end
    return { mode = "metadata", why = why }
  end
  local player, err = hrr.playback.locate({ build = true })
  if not player then
    if mode == "native" then stop(1, err) end
    return { mode = "metadata", why = "no hrr-playback: " .. err }
  end
  return { mode = "native", player = player }
end

-- Runs the preflight and acts on it: a block stops the replay (the finding
-- still explains why), a version mismatch asks, unless --yes. Returns the
-- report, or nil when preflight.skip is set.
function triage.preflight(process, plan, gpu)
  if hrr.config.get("preflight.skip") then
    hrr.log.info("skipping replay preflight (preflight.skip)")
    return nil
  end
  local mode = plan.mode == "docker" and "docker" or "host"
  local report = hrr.preflight.check(process, { mode = mode, gpu = gpu })
  if plan.mode == "metadata" or report.status ~= "confirm" then
    return report
  end
  if hrr.config.get("preflight.continue") then
    hrr.log.info("continuing despite version mismatch (--yes / preflight.continue)")
  elseif not hrr.interactive() then
    stop(2, "the capture's HIP runtime or comgr version differs from this host's; re-run with --yes to replay anyway")
  elseif hrr.confirm("Version mismatch detected (" .. table.concat(report.confirms, "; ") .. "). Continue?") then
    hrr.log.info("continuing after confirmation")
  else
    stop(3, "aborted at the version mismatch prompt")
  end
  return report
end

-- Replays one process with the plan's mode and player; returns the replay
-- result table.
function triage.replay(process, plan, gpu)
  hrr.log.info("replay=" .. plan.mode .. " gpu=" .. gpu)
  local run = hrr.replay.run({
    archive = process,
    player = plan.player and plan.player.path,
    mode = plan.mode,
    gpu = gpu,
  })
  hrr.log.info("replay log=" .. run.log)
  return run
end

-- What a metadata-only finding says about the archive beyond its health:
-- the kernels it launches (full names, most launched first) and the D2H
-- checks a replay would verify.
local function describe_archive(f, summary)
  local shown, names = 5, {}
  for i, k in ipairs(summary.kernels or {}) do
    if i > shown then
      names[#names + 1] = "and " .. (#summary.kernels - shown) .. " more (hrr archive info --kernels all)"
      break
    end
    names[#names + 1] = k.name .. " x" .. k.launches
  end
  if #names > 0 then
    f = hrr.finding.add_note(f, "kernels in the archive, by launches: " .. table.concat(names, ", "))
  end
  return hrr.finding.add_note(f, "D2H checks a replay would verify: " .. (summary.d2h_checks or 0))
end

-- Turns the evidence of one process into its finding: the classification,
-- then what the run adds (a built player, the other processes of the root,
-- why it is metadata only). `evidence` holds summary, plan, run (nil
-- without a replay), report (nil without a preflight) and root (nil for a
-- process directory).
function triage.classify(process, evidence)
  local plan, summary, root = evidence.plan, evidence.summary, evidence.root
  local f = hrr.classify({
    logs = evidence.run and { evidence.run.log } or {},
    archive = summary,
    replay = evidence.run,
    preflight = evidence.report,
    metadata_only = plan.mode == "metadata",
  })
  if plan.player and plan.player.built then
    f = hrr.finding.add_label(f, "BUILD-NEEDED", "hrr-playback was built from source for this run: " .. plan.player.path)
  end
  if root and #root.processes > 1 then
    local others = {}
    for _, p in ipairs(root.processes) do
      if p.path ~= process then others[#others + 1] = "pid-" .. p.pid end
    end
    f = hrr.finding.add_label(f, "MULTI-PROCESS",
      "the capture root holds " .. #root.processes .. " processes; this finding covers " ..
      basename(process) .. " (" .. root.reason .. "); triage the others separately: " ..
      table.concat(others, ", "))
  end
  if plan.mode == "metadata" then
    f = hrr.finding.add_note(f, "metadata only: " .. plan.why)
    f = describe_archive(f, summary)
  end
  return f
end

-- One finding as text in output.format.
function triage.render(f)
  if hrr.config.get("output.format") == "json" then return hrr.render.json(f) end
  return hrr.render.markdown(f)
end

-- The exit code of a run from its results ({name =, finding =, blocked =}
-- each): 1 when a preflight blocked a replay; with --exit-code the highest
-- outcome code of any process; else 0.
function triage.exit_code(results, opts)
  local blocked = false
  for _, r in ipairs(results) do blocked = blocked or r.blocked end
  if blocked then
    hrr.log.error("preflight blocked the replay on this host; the finding says why")
    return 1
  end
  if not opts.exit_code then return 0 end
  local code = 0
  for _, r in ipairs(results) do
    local f = r.finding
    local c = f.fault_class == "metadata_only" and METADATA_ONLY_EXIT or OUTCOME_EXIT[f.outcome] or OUTCOME_EXIT.UNKNOWN
    if c > code then code = c end
  end
  return code
end

-- Writes a finding under the workdir as <pid-dir>-<stamp>.finding.<ext>.
local function save(text, process)
  local ext = hrr.config.get("output.format") == "json" and "json" or "md"
  local name = basename(process) .. "-" .. hrr.stamp() .. ".finding." .. ext
  local path = hrr.fs.write(hrr.workdir() .. "/" .. name, text)
  hrr.log.info("finding=" .. path)
  return path
end

-- Triages one process directory and saves its finding under the workdir.
-- `opts.plan` is the run's replay plan (made with triage.plan(hrr.opts)
-- when absent); `opts.root` the capture root it belongs to, if any.
-- Returns {name =, finding =, blocked =, text =, saved =}.
function triage.triage_one(process, opts)
  local plan = opts.plan or triage.plan(hrr.opts)
  hrr.log.info("archive=" .. process)
  local summary = hrr.archive.info(process)
  local gpu = hrr.config.get("replay.gpu")
  if gpu == "auto" then
    gpu = plan.mode == "metadata" and 0 or hrr.replay.pick_gpu()
  end
  local report = triage.preflight(process, plan, gpu)
  local blocked = plan.mode ~= "metadata" and report ~= nil and report.status == "blocked"
  local run
  if plan.mode ~= "metadata" and not blocked then
    run = triage.replay(process, plan, gpu)
  end
  local f = triage.classify(process, {
    summary = summary, plan = plan, run = run, report = report, root = opts.root,
  })
  local text = triage.render(f)
  local saved = save(text, process)
  return { name = basename(process), finding = f, blocked = blocked, text = text, saved = saved }
end

-- The process directories a run covers: every process of a root with
-- --all, else the chosen one, else the directory given.
local function targets(opts)
  local a = hrr.archive.resolve(opts.archive)
  local root = a.kind == "root" and a or nil
  local list = {}
  if root and opts.all then
    for _, p in ipairs(root.processes) do
      list[#list + 1] = p.path
    end
  elseif root then
    if not a.chosen then stop(1, "no process in " .. a.path .. " can be triaged: " .. (a.reason or "no pid-* directory holds an events.bin")) end
    for _, p in ipairs(root.processes) do
      if p.pid == a.chosen then list[1] = p.path end
    end
    hrr.log.info("chose pid-" .. a.chosen .. ": " .. a.reason)
  else
    list[1] = a.path
  end
  return list, root
end

local function main(opts)
  local list, root = targets(opts)
  -- One plan for the whole run: the player is located (or built) once,
  -- never a second build attempt for the next process. A triage over many
  -- archives makes it once and hands it to each of its workers (opts.plan).
  local plan = opts.plan or triage.plan(opts)
  local results, texts = {}, {}
  for _, process in ipairs(list) do
    local r = triage.triage_one(process, { plan = plan, root = root })
    results[#results + 1] = r
    texts[#texts + 1] = r.text
  end

  local out
  if hrr.config.get("output.format") == "json" and #results > 1 then
    local findings = {}
    for i, r in ipairs(results) do findings[i] = r.finding end
    out = hrr.render.json_list(findings)
  elseif #results > 1 then
    out = table.concat(texts, "\n") .. "\n" .. hrr.render.summary(results)
  else
    out = texts[1]
  end
  hrr.out(out)
  if opts.output then
    hrr.fs.write(opts.output, out)
    hrr.log.info("wrote " .. opts.output)
  end
  return triage.exit_code(results, opts)
end

-- The whole run, which hrr calls with hrr.opts: its return value is the
-- exit code. An early stop prints its line and exits with its code.
function triage.run(opts)
  local ok, result = pcall(main, opts)
  if ok then return result end
  if getmetatable(result) == Stop then
    hrr.log.error(result.message)
    return result.code
  end
  error(result, 0)
end

return triage
