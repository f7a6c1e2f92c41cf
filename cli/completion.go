package cli

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

func completionCommand() (*cli.Command, *binder) {
	cmd := &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: `Load it in your shell, for example:
   source <(hookback completion bash)
   hookback completion zsh > "${fpath[1]}/_hookback"
   hookback completion fish > ~/.config/fish/completions/hookback.fish`,
		Action: func(c *cli.Context) error {
			out := c.App.Writer
			switch shell := c.Args().First(); shell {
			case "bash":
				_, err := fmt.Fprint(out, bashCompletion)
				return err
			case "zsh":
				_, err := fmt.Fprint(out, zshCompletion)
				return err
			case "fish":
				s, err := c.App.ToFishCompletion()
				if err != nil {
					return err
				}
				_, err = fmt.Fprint(out, s)
				return err
			default:
				return usage(fmt.Errorf("completion takes one shell, bash, zsh or fish; got %q", shell))
			}
		},
	}
	return cmd, nil
}

// bashCompletion asks hookback itself for candidates (urfave/cli's
// --generate-bash-completion), so it always matches this binary's commands
// and flags.
const bashCompletion = `# bash completion for hookback
_hookback_complete() {
  local cur words
  cur="${COMP_WORDS[COMP_CWORD]}"
  if [[ "$cur" == -* ]]; then
    words=$("${COMP_WORDS[@]:0:$COMP_CWORD}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    words=$("${COMP_WORDS[@]:0:$COMP_CWORD}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o bashdefault -o default -F _hookback_complete hookback
`

const zshCompletion = `#compdef hookback
_hookback() {
  local -a opts
  local cur="${words[-1]}"
  if [[ "$cur" == -* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} "$cur" --generate-bash-completion 2>/dev/null)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion 2>/dev/null)}")
  fi
  _describe 'values' opts
}
compdef _hookback hookback
`
