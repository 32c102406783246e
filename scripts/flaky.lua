-- flaky: replay an archive three times and say whether the outcome is stable.
-- Usage: hrr flaky <pid-dir>
--
-- An example workflow embedded in hrr; a flaky.lua in a scripts directory
-- replaces it. It replays natively with the hrr-playback that
-- `hrr playback` shows, and exits 0 when all three runs agree.
local archive = hrr.args[1] or error("usage: hrr flaky <pid-dir>")
local player = assert(hrr.playback.locate({}))
local summary = hrr.archive.info(archive)
local outcomes = {}
for i = 1, 3 do
  local run = hrr.replay.run({ archive = archive, player = player.path, mode = "native" })
  local f = hrr.classify({ logs = { run.log }, archive = summary, replay = run })
  outcomes[i] = f.outcome .. " " .. f.fault_class .. (f.kernel_name and (" in " .. f.kernel_name) or "")
  hrr.log.info("run " .. i .. ": " .. outcomes[i])
end
local stable = outcomes[1] == outcomes[2] and outcomes[2] == outcomes[3]
hrr.out((stable and "stable: " or "FLAKY: ") .. table.concat(outcomes, "; ") .. "\n")
return stable and 0 or 1
