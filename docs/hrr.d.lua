---@meta hrr
-- LuaCATS annotations of the `hrr` module that hrr Lua workflows see, for
-- lua-language-server. Print them with `hrr lua-types`; the reference is
-- docs/lua-api.md. Unknown values are nil (never a null placeholder).
-- An integer that Lua cannot hold (2^63 or more; a pid, a trailer count or a
-- time span from a damaged archive) arrives as its decimal string, hence
-- `integer|string`; handing the table back to hrr reads the exact number.

---@alias hrr.Outcome "PASS"|"MAF"|"FAIL"|"ABORT"|"HANG"|"UNKNOWN"
---@alias hrr.FaultClass "replay_pass"|"illegal_memory_access"|"read_only_page_fault"|"replay_fatal_api"|"replay_oom"|"replay_aborted"|"replay_crashed"|"hang"|"nan_inf_divergence"|"version_mismatch"|"unknown"|"metadata_only"|"preflight_blocked"
---@alias hrr.Label "CRASH-TRUNCATED"|"D2H-FAIL"|"MISSING-HANDLE"|"STALE-POINTER"|"NOOP-API"|"BUILD-NEEDED"|"MULTI-PROCESS"|"PLACEMENT-FALLBACK"|"CLEAN"
---@alias hrr.KernelSource "fault_line"|"abort_line"|"trace_kernels"|"gpu_error_line"|"last_event"|"single_kernel_archive"|"not_found_line"
---@alias hrr.CauseKind "graph_incomplete"|"device_count"|"archive_incomplete"|"guard_fault"|"region_oob"|"file_cap"
---@alias hrr.ProcessState "complete"|"incomplete"|"not_finalized"|"unknown"

---Options `hrr triage` passes to triage.lua.
---@class hrr.TriageOpts
---@field archive? string The archive argument, absolute, symlinks resolved.
---@field all? boolean `--all`: every process of a capture root.
---@field no_replay? boolean `--no-replay`: metadata only.
---@field exit_code? boolean `--exit-code`: one exit code per outcome.
---@field output? string `-o FILE`, writable with hrr.fs.write.
---@field plan? table The replay plan a triage over many archives made once for its workers.

---@class hrr.Problem
---@field kind string Stable identifier (`torn_tail`, `no_trailer`, …).
---@field detail string What happened, in words.

---One `pid-*` process archive of a capture root.
---@class hrr.ProcessEntry
---@field pid integer|string
---@field parent_pid? integer|string
---@field state hrr.ProcessState
---@field events integer
---@field blobs integer
---@field events_bin_bytes integer
---@field path string Absolute path of the `pid-*` directory.

---What a path designates (hrr.archive.resolve).
---@class hrr.ArchiveRef
---@field path string The process archive to work on (the chosen one for a root).
---@field root? string The capture root, when the process lives in one.
---@field kind "process"|"root"
---@field processes hrr.ProcessEntry[]
---@field chosen integer|string Pid of the chosen process.
---@field reason string Why it was chosen.
---@field leftovers string[] `pid-*` directories without events.bin.
---@field problems hrr.Problem[] Refused entries.

---@class hrr.FileRefs
---@field files integer
---@field referenced integer
---@field missing string[]

---The `hrr archive info --json` document of a process archive.
---@class hrr.ArchiveSummary
---@field schema_version integer
---@field kind "process"
---@field path string
---@field pid? integer|string
---@field format_version? integer
---@field flags? integer
---@field api_table? string
---@field state hrr.ProcessState
---@field complete boolean
---@field trailer { present: boolean, total_events?: integer|string }
---@field truncated boolean
---@field torn_bytes integer
---@field records_after_trailer integer
---@field events integer
---@field kernel_launches integer
---@field threads integer
---@field duration_ns integer|string
---@field events_modified? string When events.bin was last written (RFC 3339 UTC).
---@field apis { id: integer, name: string, count: integer }[]
---@field kernels { name: string, launches: integer, code_object?: string }[]
---@field blobs hrr.FileRefs
---@field code_objects hrr.FileRefs
---@field d2h_checks integer
---@field regions { streams: integer, records: integer }
---@field memory? hrr.MemorySection The allocation map and launch pointer audit.
---@field manifest? table
---@field problems hrr.Problem[]
---@field notes string[]

---One range of the allocation map.
---@class hrr.Range
---@field api string Allocating API, or "region block" / "region segment".
---@field base string `0x…`
---@field size integer|string
---@field alloc_seq? integer|string
---@field freed_by? string Freeing API, or "region".
---@field free_seq? integer|string
---@field thread? integer|string

---A launch pointer the audit shows.
---@class hrr.PointerExample
---@field kind "stale_pointer"|"unattributed"
---@field launch_seq integer|string
---@field kernel string
---@field argument integer
---@field address string
---@field range? hrr.Range The freed range (stale pointers).

---The `memory` section of `hrr archive info --json`.
---@class hrr.MemorySection
---@field allocations integer|string
---@field frees integer|string
---@field live_at_end integer|string
---@field peak_live_bytes integer|string
---@field stale_pointer_launches integer|string
---@field unattributed_pointer_args integer|string
---@field examples hrr.PointerExample[]

---The `hrr archive memory --json` document.
---@class hrr.MemoryReport
---@field path string
---@field at? integer|string
---@field live hrr.Range[]
---@field live_total integer|string
---@field address? string
---@field history hrr.Range[]
---@field passes { launch_seq: integer|string, kernel: string, argument: integer, address: string, live: boolean }[]
---@field memory? hrr.MemorySection
---@field notes string[]

---The `hrr archive info --json` document of a capture root with several processes.
---@class hrr.RootListing
---@field schema_version integer
---@field kind "root"
---@field path string
---@field processes hrr.ProcessEntry[]
---@field chosen? integer|string
---@field reason string
---@field leftovers string[]
---@field problems hrr.Problem[]

---@class hrr.ExecOptions
---@field timeout? number|string Seconds, or a duration such as "30s".
---@field env? table<string, string> Variables to set; the rest is inherited.
---@field cwd? string

---@class hrr.ExecResult
---@field status? integer Exit status, when the program exited.
---@field signal? integer The signal that killed it.
---@field stdout string
---@field stderr string
---@field timed_out boolean

---@class hrr.JsonOptions
---@field pretty? boolean Indent the output.

---@class hrr.LabelEntry
---@field label hrr.Label
---@field detail string

---@class hrr.ArchiveHealth
---@field complete? boolean
---@field trailer? boolean
---@field truncated? boolean
---@field recovered_events? integer
---@field events? integer
---@field kernel_launches? integer
---@field blobs? integer
---@field code_objects? integer
---@field threads? integer
---@field processes (integer|string)[]
---@field events_modified? string

---@class hrr.CaptureInfo
---@field hip_runtime_version? string
---@field comgr_version? string
---@field device_count? integer
---@field gcn_arch? string
---@field hip_so? string

---What hrr-playback said caused a failed replay (its line, without `[HRR] `).
---@class hrr.Cause
---@field kind hrr.CauseKind
---@field detail string

---One `[HRR] Device  :` or `[HRR] Runtime :` line of the replay log.
---@class hrr.LoadedLine
---@field label "Device"|"Runtime"
---@field value string

---A finding (DESIGN §6; `hrr schema finding` has every field).
---@class hrr.Finding
---@field schema_version integer
---@field archive? string
---@field outcome hrr.Outcome
---@field fault_class hrr.FaultClass
---@field cause? hrr.Cause
---@field kernel_name? string
---@field kernel_family? string
---@field kernel_source? hrr.KernelSource
---@field fault_address? string
---@field fault_reason? string
---@field fault_allocation? { address: string, relation: "inside"|"past_end"|"before_start"|"freed"|"none", api?: string, base?: string, size?: integer|string, offset?: integer|string, alloc_seq?: integer|string, free_seq?: integer|string, argument?: { index: integer, kernel: string }, placement: "placed"|"fell_back"|"off"|"unknown" }
---@field gpu_node? integer
---@field failing_event_seq? integer
---@field failing_call_index? integer
---@field failing_thread? integer
---@field failing_api? string
---@field kernarg_address? string
---@field grid? string
---@field workgroup? string
---@field replay_signal? integer
---@field replay_exception? string
---@field replay_exit_code? integer
---@field timed_out_after_s? integer
---@field last_progress_kernel? string
---@field last_event_kernel? string
---@field kernels_launched? integer
---@field d2h_pass? integer
---@field d2h_fail? integer
---@field d2h_attempted? integer
---@field d2h_within_tol? integer
---@field gpu_kernel_ms? number
---@field gpu_graph_ms? number
---@field gpu_total_ms? number
---@field placement? { off: string }|{ placed?: integer, fell_back: integer, named: string[] }
---@field archive_health hrr.ArchiveHealth
---@field archive_format_version? integer
---@field reader_format_version? integer
---@field capture hrr.CaptureInfo
---@field preflight? hrr.PreflightReport
---@field replay? hrr.FindingReplay
---@field labels hrr.LabelEntry[]
---@field next_steps string[]
---@field sources string[]
---@field notes string[]
local Finding = {}

---Attaches `label` in place (labels form a set) and returns the finding.
---@param label hrr.Label
---@param detail? string
---@return hrr.Finding
function Finding:label(label, detail) end

---Appends a note in place (duplicates dropped) and returns the finding.
---@param text string
---@return hrr.Finding
function Finding:note(text) end

---Appends a next step in place (duplicates dropped) and returns the finding.
---@param text string
---@return hrr.Finding
function Finding:next_step(text) end

---@class hrr.ClassifyOptions
---@field logs? string|string[] Replay log files.
---@field archive? string|hrr.ArchiveSummary An archive path or the table hrr.archive.info returned.
---@field replay? hrr.ReplayResult
---@field preflight? hrr.PreflightReport
---@field metadata_only? boolean No replay was run.

---@class hrr.ReplayOptions
---@field archive string Required: a `pid-*` directory (or a root holding one).
---@field player? string The hrr-playback binary.
---@field mode? "native"|"docker"|"auto"
---@field gpu? integer|"auto"
---@field timeout? string|number "30m", "2h", "0" = no limit; a number is seconds.
---@field sync? "launch"|"event"|"none"
---@field log? string The log file (default: in the workdir).
---@field extra_args? string[] Given to the player after hrr's flags, before the archive.
---@field trace_kernels? boolean
---@field progress_seconds? integer

---@class hrr.ReplayResult
---@field log string
---@field exit_code? integer
---@field signal? integer
---@field exception? string
---@field timed_out boolean
---@field duration_s number
---@field command string[]
---@field mode "native"|"docker"
---@field gpu integer
---@field loaded? hrr.LoadedLine[] In a finding's `replay`: what the player reported it loaded (filled in by hrr.classify).

---@class hrr.FindingReplay: hrr.ReplayResult
---@field stopped_by? "hrr_timeout"|"player_wall_limit"|"player_watchdog" Which limit ended the replay.

---@class hrr.PreflightOptions
---@field mode? "host"|"docker"
---@field image? string A docker image to probe (implies mode "docker").
---@field gpu? integer
---@field strict_version? boolean
---@field strict_arch? boolean

---@class hrr.CaptureFacts
---@field metadata boolean
---@field missing_reason? string
---@field schema_version? string
---@field hip_runtime_version? string
---@field comgr_version? string
---@field device_count? integer
---@field captured_device_count? integer
---@field devices { ordinal?: integer, name?: string, gcn_arch_name?: string }[]

---@class hrr.HostFacts
---@field source string
---@field gpu_tool? string
---@field visible_gpus? integer
---@field gpus { id: integer, arch?: string, name?: string }[]
---@field hip_runtime_version? string
---@field hip_runtime_from? string
---@field comgr_version? string
---@field comgr_from? string
---@field problems string[]

---@class hrr.PreflightReport
---@field status "ok"|"warn"|"confirm"|"blocked"
---@field capture hrr.CaptureFacts
---@field host? hrr.HostFacts
---@field blocks string[]
---@field confirms string[]
---@field warnings string[]
---@field notes string[]

---@class hrr.PlayerLocation
---@field path string
---@field how "config"|"rocm"|"path"|"built"
---@field built boolean This call compiled it.
---@field version? { format_version?: integer, source_revision?: string, source_branch?: string, build_type?: string, hip_runtime_version?: string, ended?: string }

---The hrr module.
---@class hrr
hrr = {}

---Positional arguments of the workflow.
---@type string[]
hrr.args = {}

---Options of a builtin front end (`hrr triage`); empty otherwise.
---@type hrr.TriageOpts
hrr.opts = {}

---Writes `text` to stdout as is (no newline added).
---@param text string|number
function hrr.out(text) end

---The run's workdir, created (0700) on first use.
---@return string
function hrr.workdir() end

---A unique stamp: UTC `YYYYMMDDTHHMMSSZ-<pid>`.
---@return string
function hrr.stamp() end

---Both stdin and stderr are terminals.
---@return boolean
function hrr.interactive() end

---Asks `question [y/N]` on the terminal; false without one.
---@param question string
---@return boolean
function hrr.confirm(question) end

---Runs an argv vector (never a shell) with a time limit, capturing its output.
---@param argv string[]
---@param opts? hrr.ExecOptions
---@return hrr.ExecResult
function hrr.exec(argv, opts) end

---The analyzer: replay logs plus the archive, replay and preflight tables in, a finding out.
---@param opts hrr.ClassifyOptions
---@return hrr.Finding
function hrr.classify(opts) end

hrr.archive = {}

---What a path designates: a process archive or a capture root, and the chosen process.
---@param path string
---@return hrr.ArchiveRef
function hrr.archive.resolve(path) end

---The `hrr archive info --json` document of a path.
---@param path string
---@return hrr.ArchiveSummary|hrr.RootListing
function hrr.archive.info(path) end

---The allocation map of a process archive (`hrr archive memory --json`).
---@param path string
---@param opts? { at?: integer, address?: integer|string }
---@return hrr.MemoryReport
function hrr.archive.memory(path, opts) end

hrr.config = {}

---The effective value of a dotted config key, or nil.
---@param key string
---@return any
function hrr.config.get(key) end

hrr.log = {}

---`[hrr] …` on stderr, unless -q.
---@param ... any
function hrr.log.info(...) end

---`warning: …` on stderr, unless -q.
---@param ... any
function hrr.log.warn(...) end

---`error: …` on stderr; does not stop the script.
---@param ... any
function hrr.log.error(...) end

hrr.fs = {}

---Something exists at `path`.
---@param path string
---@return boolean
function hrr.fs.exists(path) end

---`path` can be opened for reading.
---@param path string
---@return boolean
function hrr.fs.readable(path) end

---The whole file (at most 64 MiB).
---@param path string
---@return string
function hrr.fs.read(path) end

---Writes atomically (0600) under the workdir (relative paths) or to a `-o` file; returns the absolute path.
---@param path string
---@param text string
---@return string
function hrr.fs.write(path, text) end

hrr.json = {}

---`value` as JSON.
---@param value any
---@param opts? hrr.JsonOptions
---@return string
function hrr.json.encode(value, opts) end

---JSON text as a Lua value (null becomes nil).
---@param text string
---@return any
function hrr.json.decode(text) end

hrr.finding = {}

---A copy of `f` with `label` attached.
---@param f hrr.Finding
---@param label hrr.Label
---@param detail? string
---@return hrr.Finding
function hrr.finding.add_label(f, label, detail) end

---A copy of `f` with a note appended.
---@param f hrr.Finding
---@param text string
---@return hrr.Finding
function hrr.finding.add_note(f, text) end

---A copy of `f` with a next step appended.
---@param f hrr.Finding
---@param text string
---@return hrr.Finding
function hrr.finding.add_next_step(f, text) end

hrr.render = {}

---The finding as the markdown report.
---@param f hrr.Finding
---@return string
function hrr.render.markdown(f) end

---The finding as pretty JSON (schema: `hrr schema finding`).
---@param f hrr.Finding
---@return string
function hrr.render.json(f) end

---A JSON array of findings.
---@param findings hrr.Finding[]
---@return string
function hrr.render.json_list(findings) end

---The markdown table of `hrr triage --all`: one row per process.
---@param rows {name: string, finding: hrr.Finding}[]
---@return string
function hrr.render.summary(rows) end

hrr.replay = {}

---Replays one process capture with hrr-playback; blocks until it ends.
---@param opts hrr.ReplayOptions
---@return hrr.ReplayResult
function hrr.replay.run(opts) end

---The GPU index `replay.gpu = "auto"` means (the visible GPU with most free VRAM per rocm-smi or amd-smi, else the lowest one listed, else 0).
---@return integer
function hrr.replay.pick_gpu() end

hrr.preflight = {}

---Can this host (or image) replay the capture faithfully?
---@param archive string
---@param opts? hrr.PreflightOptions
---@return hrr.PreflightReport
function hrr.preflight.check(archive, opts) end

hrr.playback = {}

---The hrr-playback a replay would use (built once with `build = true`), or nil and why not.
---@param opts? { build?: boolean }
---@return hrr.PlayerLocation?
---@return string? err
function hrr.playback.locate(opts) end

---A row of a triage run: one process triaged by `triage_one`.
---@class hrr.TriageResult
---@field name string The `pid-*` directory's name.
---@field finding hrr.Finding
---@field blocked boolean The preflight blocked the replay.
---@field text string The finding rendered in output.format.
---@field saved string Where the finding was written under the workdir.

---The steps of the embedded triage.lua; replace one and return the table.
---@class hrr.TriagePreset
---@field plan fun(opts: hrr.TriageOpts): table
---@field preflight fun(process: string, plan: table, gpu: integer): hrr.PreflightReport?
---@field replay fun(process: string, plan: table, gpu: integer): hrr.ReplayResult
---@field classify fun(process: string, evidence: table): hrr.Finding
---@field render fun(f: hrr.Finding): string
---@field exit_code fun(results: hrr.TriageResult[], opts: hrr.TriageOpts): integer
---@field triage_one fun(process: string, opts: { plan?: table, root?: hrr.ArchiveRef }): hrr.TriageResult
---@field run fun(opts: hrr.TriageOpts): integer

hrr.workflow = {}

---What the workflow embedded in hrr under `name` returns: for "triage", a fresh table of its steps.
---@param name "triage"|"flaky"|string
---@return hrr.TriagePreset|any
function hrr.workflow.embedded(name) end
