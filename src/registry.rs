//! The one list of the commands `hrr <name>` can reach: the builtins of the
//! clap grammar, the config's aliases, the Lua workflows and the external
//! `hrr-<name>` programs, each with where it comes from. When several share
//! a name the winner is decided here, once, in the order builtin → alias →
//! Lua workflow → external (DESIGN §9), so a builtin can never be shadowed.
//! Running a name, `hrr --list`, the completion scripts, `hrr help` and the
//! did-you-mean hint all read this list, as cargo's one `list_commands()`
//! feeds its `--list`, help and suggestions; a new builtin in `cli.rs`
//! reaches all of them.

use clap::CommandFactory;

use crate::cli::Cli;
use hrr::config::{Alias, Config};
use hrr::external_search::External;
use hrr::lua::{self, Workflow};

/// Builtins whose work is done by the Lua workflow of the same name, so a
/// user's `<name>.lua` customises them instead of being hidden.
const WORKFLOW_BUILTINS: &[&str] = &["triage"];

/// What a command is and where it comes from. The variants are in
/// precedence order: of two commands with one name, the earlier one runs.
#[derive(Debug)]
pub enum Source {
    /// A builtin subcommand, with its one-line description.
    Builtin {
        /// The description clap shows.
        about: String,
    },
    /// An `[alias]` entry of the config, with the file and line that set it.
    Alias(Alias),
    /// A Lua workflow: a script file (and the files it shadows) or one
    /// embedded in `hrr`.
    Workflow(Workflow),
    /// An `hrr-<name>` program (and the programs it shadows).
    External(External),
}

/// One command of the registry.
#[derive(Debug)]
pub struct Command {
    /// The name typed after `hrr`.
    pub name: String,
    /// What it is and where it comes from.
    pub source: Source,
}

/// How a command stands against the others of its name.
#[derive(Debug)]
pub enum Standing<'a> {
    /// `hrr <name>` runs it.
    Runs,
    /// The builtin of the same name runs it as its workflow: `hrr triage`
    /// runs the `triage.lua` that wins.
    RunByBuiltin,
    /// `hrr <name>` runs this other command instead.
    HiddenBy(&'a Command),
}

impl Command {
    /// The one-line description a completion script shows.
    pub fn about(&self) -> String {
        match &self.source {
            Source::Builtin { about } => about.clone(),
            Source::Alias(alias) => format!("alias for `hrr {}`", alias.expansion),
            Source::Workflow(w) => format!("Lua workflow ({})", w.origin(false)),
            Source::External(e) => format!("external command {}", e.path.display()),
        }
    }

    /// What kind of command it is, as a notice names it ("hidden by the
    /// alias of the same name").
    pub fn kind(&self) -> &'static str {
        match self.source {
            Source::Builtin { .. } => "builtin",
            Source::Alias(_) => "alias",
            Source::Workflow(_) => "Lua workflow",
            Source::External(_) => "external command",
        }
    }

    /// It is a builtin.
    pub fn is_builtin(&self) -> bool {
        matches!(self.source, Source::Builtin { .. })
    }
}

/// Every command visible from here, in precedence order: builtins in the
/// order of the grammar, then aliases, Lua workflows and externals, each
/// group sorted by name.
#[derive(Debug)]
pub struct Registry {
    commands: Vec<Command>,
}

/// Every command in precedence order (builtins, aliases, workflows,
/// externals), each source read only when the iteration reaches it.
fn in_precedence(config: &Config) -> impl Iterator<Item = Command> + '_ {
    let builtins = Cli::command()
        .get_subcommands()
        .map(|c| Command {
            name: c.get_name().to_string(),
            source: Source::Builtin {
                about: c.get_about().map(|a| a.to_string()).unwrap_or_default(),
            },
        })
        .collect::<Vec<_>>();
    let aliases = std::iter::once_with(|| config.aliases())
        .flatten()
        .map(|(name, alias)| Command {
            name,
            source: Source::Alias(alias),
        });
    let workflows = std::iter::once_with(|| lua::scripts::all(config))
        .flatten()
        .map(|w| Command {
            name: w.name.clone(),
            source: Source::Workflow(w),
        });
    let externals = std::iter::once_with(hrr::external_search::all)
        .flatten()
        .map(|e| Command {
            name: e.name.clone(),
            source: Source::External(e),
        });
    builtins
        .into_iter()
        .chain(aliases)
        .chain(workflows)
        .chain(externals)
}

impl Registry {
    /// Gathers the builtins, the aliases of `config`, the workflows of its
    /// script directories and the externals in the user's `bin/` and on
    /// `PATH`.
    pub fn load(config: &Config) -> Registry {
        Registry {
            commands: in_precedence(config).collect(),
        }
    }

    /// The command `hrr <name>` runs, looking only as far as the first
    /// source that has it: running an alias or a workflow reads no `PATH`
    /// directory.
    pub fn find(config: &Config, name: &str) -> Option<Command> {
        in_precedence(config).find(|c| c.name == name)
    }

    /// Every command, shadowed ones included, in precedence order.
    pub fn commands(&self) -> &[Command] {
        &self.commands
    }

    /// The command `hrr <name>` runs, if any.
    pub fn resolve(&self, name: &str) -> Option<&Command> {
        self.commands.iter().find(|c| c.name == name)
    }

    /// The commands `hrr <name>` runs: one per name, the winner.
    pub fn reachable(&self) -> impl Iterator<Item = &Command> {
        self.commands
            .iter()
            .filter(|c| matches!(self.standing(c), Standing::Runs))
    }

    /// How `command` (one of [`Registry::commands`]) stands against the
    /// others of its name.
    pub fn standing(&self, command: &Command) -> Standing<'_> {
        match self.resolve(&command.name) {
            Some(winner) if !std::ptr::eq(winner, command) => {
                let runs_it = winner.is_builtin()
                    && matches!(command.source, Source::Workflow(_))
                    && WORKFLOW_BUILTINS.contains(&command.name.as_str());
                if runs_it {
                    Standing::RunByBuiltin
                } else {
                    Standing::HiddenBy(winner)
                }
            }
            _ => Standing::Runs,
        }
    }

    /// The error for a name no command has, with the closest name as a
    /// did-you-mean hint when one is a plausible typo.
    pub fn unknown(&self, name: &str) -> anyhow::Error {
        let names = self.reachable().map(|c| c.name.as_str());
        let hint = hrr::suggest::closest(name, names)
            .map(|s| format!("; did you mean '{s}'?"))
            .unwrap_or_default();
        anyhow::anyhow!(
            "no such command: '{}'{hint} (`hrr --list` shows every command)",
            hrr::ui::inert(name)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry(commands: Vec<(&str, Source)>) -> Registry {
        let commands = commands
            .into_iter()
            .map(|(name, source)| Command {
                name: name.into(),
                source,
            })
            .collect();
        Registry { commands }
    }

    fn builtin() -> Source {
        Source::Builtin {
            about: String::new(),
        }
    }

    fn workflow(name: &str) -> Source {
        let file = format!("{name}.lua");
        Source::Workflow(Workflow::from_file(std::path::Path::new(&file)))
    }

    #[test]
    fn the_first_of_a_name_runs_and_hides_the_rest_except_a_builtins_own_workflow() {
        let r = registry(vec![
            ("triage", builtin()),
            ("config", builtin()),
            ("triage", workflow("triage")),
            ("config", workflow("config")),
            ("sweep", workflow("sweep")),
        ]);
        let standings: Vec<String> = r
            .commands()
            .iter()
            .map(|c| match r.standing(c) {
                Standing::Runs => format!("{} runs", c.name),
                Standing::RunByBuiltin => format!("{} run by builtin", c.name),
                Standing::HiddenBy(w) => format!("{} hidden by {}", c.name, w.kind()),
            })
            .collect();
        assert_eq!(
            standings,
            [
                "triage runs",
                "config runs",
                "triage run by builtin",
                "config hidden by builtin",
                "sweep runs"
            ]
        );
        let names: Vec<&str> = r.reachable().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["triage", "config", "sweep"]);
    }

    #[test]
    fn a_typo_is_answered_with_the_closest_reachable_name() {
        let r = registry(vec![("config", builtin()), ("sweep", workflow("sweep"))]);
        assert_eq!(
            r.unknown("sweeb").to_string(),
            "no such command: 'sweeb'; did you mean 'sweep'? (`hrr --list` shows every command)"
        );
        assert_eq!(
            r.unknown("zzzzzz").to_string(),
            "no such command: 'zzzzzz' (`hrr --list` shows every command)"
        );
    }
}
