/**
 * `sightline completion bash|zsh|fish`: a shell completion script made from the command tree itself
 * (commands, subcommands, options, as `--help` shows them), so it completes whatever the program has.
 * Each script finds the command path typed so far (the words that name subcommands, options skipped),
 * then offers that command's subcommands, or its options after a `-`; elsewhere file names.
 */
import type { Command } from "commander";
import { CliError } from "./output.ts";

export const SHELLS = ["bash", "zsh", "fish"] as const;
type Shell = (typeof SHELLS)[number];

export interface CommandNode {
  /** The subcommand names from the program down, e.g. ["collections", "list"]; [] for the program. */
  path: string[];
  description: string;
  commands: CommandNode[];
  options: Array<{ short?: string; long?: string; takesValue: boolean; description: string }>;
}

/** The program's commands as `--help` shows them, `help` and `--help` included, depth first. */
export function commandTree(command: Command, path: string[] = []): CommandNode {
  const help = command.createHelp();
  return {
    path,
    description: command.description(),
    commands: help.visibleCommands(command).map((child) => commandTree(child, [...path, child.name()])),
    options: help.visibleOptions(command).map((option) => ({
      short: option.short,
      long: option.long,
      takesValue: option.required || option.optional,
      description: option.description,
    })),
  };
}

/** Every node of the tree, the program first. */
export function allCommands(node: CommandNode): CommandNode[] {
  return [node, ...node.commands.flatMap(allCommands)];
}

/** A word in single quotes, for all three shells ('it'\''s'; fish reads \' inside quotes). */
const quoted = (text: string, shell: Shell) =>
  shell === "fish" ? `'${text.replace(/[\\']/g, "\\$&")}'` : `'${text.replaceAll("'", `'\\''`)}'`;
/** A description on one line, short enough for a completion menu. */
const brief = (text: string) => {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
};
const flagsOf = (node: CommandNode) =>
  node.options.flatMap((option) => [option.short, option.long].filter((flag) => flag !== undefined));

function bash(nodes: CommandNode[]): string {
  const cases = (words: (node: CommandNode) => string[]) =>
    nodes
      .map((node) => [node.path.join(" "), words(node)] as const)
      .filter(([, list]) => list.length > 0)
      .map(([path, list]) => `    ${quoted(path, "bash")}) echo ${quoted(list.join(" "), "bash")} ;;`)
      .join("\n");
  return `# bash completion for sightline, made by \`sightline completion bash\` from its commands.
# Install: sightline completion bash > ~/.local/share/bash-completion/completions/sightline
# or add to ~/.bashrc: source <(sightline completion bash)

_sightline_subcommands() {
  case "$1" in
${cases((node) => node.commands.map((child) => child.path.at(-1) as string))}
  esac
}

_sightline_options() {
  case "$1" in
${cases(flagsOf)}
  esac
}

_sightline() {
  local cur=\${COMP_WORDS[COMP_CWORD]} cmdpath='' word i
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=\${COMP_WORDS[i]}
    [[ $word == -* ]] && continue
    [[ " $(_sightline_subcommands "$cmdpath") " == *" $word "* ]] && cmdpath=\${cmdpath:+$cmdpath }$word
  done
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(_sightline_options "$cmdpath")" -- "$cur"))
  else
    COMPREPLY=($(compgen -W "$(_sightline_subcommands "$cmdpath")" -- "$cur"))
  fi
}

complete -o default -o bashdefault -F _sightline sightline
`;
}

function zsh(nodes: CommandNode[]): string {
  const cases = (entries: (node: CommandNode) => string[]) =>
    nodes
      .map((node) => [node.path.join(" "), entries(node)] as const)
      .filter(([, list]) => list.length > 0)
      .map(
        ([path, list]) =>
          `    ${quoted(path, "zsh")}) reply=(\n${list.map((entry) => `      ${quoted(entry, "zsh")}`).join("\n")}\n    ) ;;`,
      )
      .join("\n");
  return `#compdef sightline
# zsh completion for sightline, made by \`sightline completion zsh\` from its commands.
# Install: sightline completion zsh > "\${fpath[1]}/_sightline"
# or add to ~/.zshrc, after compinit: source <(sightline completion zsh)

_sightline_subcommands() {
  reply=()
  case $1 in
${cases((node) => node.commands.map((child) => `${child.path.at(-1)}:${brief(child.description)}`))}
  esac
}

_sightline_options() {
  reply=()
  case $1 in
${cases((node) => node.options.flatMap((option) => [option.short, option.long].filter((flag) => flag !== undefined).map((flag) => `${flag}:${brief(option.description)}`)))}
  esac
}

_sightline() {
  local -a reply names
  local cmdpath='' word i
  for (( i = 2; i < CURRENT; i++ )); do
    word=\${words[i]}
    [[ $word == -* ]] && continue
    _sightline_subcommands "$cmdpath"
    names=(\${reply%%:*})
    (( \${names[(Ie)$word]} )) && cmdpath=\${cmdpath:+$cmdpath }$word
  done
  if [[ \${words[CURRENT]} == -* ]]; then
    _sightline_options "$cmdpath"
    _describe -t options option reply
  else
    _sightline_subcommands "$cmdpath"
    if (( \${#reply} )); then _describe -t commands command reply; else _files; fi
  fi
}

if [[ \${funcstack[1]} == _sightline ]]; then _sightline "$@"; else compdef _sightline sightline; fi
`;
}

function fish(nodes: CommandNode[]): string {
  const subcommands = nodes
    .filter((node) => node.commands.length > 0)
    .map(
      (node) =>
        `        case ${quoted(node.path.join(" "), "fish")}\n            printf '%s\\n' ${node.commands.map((child) => child.path.at(-1)).join(" ")}`,
    )
    .join("\n");
  const lines = nodes.flatMap((node) => {
    const at = `-n ${quoted(`__sightline_at ${quoted(node.path.join(" "), "fish")}`, "fish")}`;
    return [
      ...node.commands.map(
        (child) =>
          `complete -c sightline ${at} -f -a ${child.path.at(-1)} -d ${quoted(brief(child.description), "fish")}`,
      ),
      ...node.options.map((option) => {
        const flags = [
          option.short && `-s ${option.short.slice(1)}`,
          option.long && `-l ${option.long.slice(2)}`,
        ]
          .filter(Boolean)
          .join(" ");
        return `complete -c sightline ${at} ${flags}${option.takesValue ? " -r" : ""} -d ${quoted(brief(option.description), "fish")}`;
      }),
    ];
  });
  return `# fish completion for sightline, made by \`sightline completion fish\` from its commands.
# Install: sightline completion fish > ~/.config/fish/completions/sightline.fish

function __sightline_subcommands
    switch "$argv[1]"
${subcommands}
    end
end

# Whether the subcommands typed so far are exactly $argv[1] (e.g. 'collections list').
function __sightline_at
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l cmdpath
    for word in $tokens
        string match -q -- '-*' $word; and continue
        contains -- $word (__sightline_subcommands "$cmdpath"); and set -a cmdpath $word
    end
    test "$cmdpath" = "$argv[1]"
end

${lines.join("\n")}
`;
}

/** The completion script of `program` for `shell`. */
export function completionScript(program: Command, shell: string): string {
  if (!(SHELLS as readonly string[]).includes(shell))
    throw new CliError(`No completion for "${shell}"; choose one of ${SHELLS.join(", ")}`, 2);
  const nodes = allCommands(commandTree(program));
  return { bash, zsh, fish }[shell as Shell](nodes);
}

export function registerCompletionCommand(program: Command): void {
  program
    .command("completion <shell>")
    .description(`print a shell completion script (${SHELLS.join(", ")}) made from these commands`)
    .addHelpText(
      "after",
      `
Install:
  bash  sightline completion bash > ~/.local/share/bash-completion/completions/sightline
  zsh   sightline completion zsh > "\${fpath[1]}/_sightline"   (or: source <(sightline completion zsh))
  fish  sightline completion fish > ~/.config/fish/completions/sightline.fish`,
    )
    .action((shell: string) => {
      process.stdout.write(completionScript(program, shell));
    });
}
