# SPDX-License-Identifier: Apache-2.0
# bash completion for acp(1): commands, options, and their values where they are a choice.
# Installed as share/bash-completion/completions/acp (loaded on demand by bash-completion).
_acp() {
    local cur prev words cword
    if declare -F _init_completion >/dev/null; then
        _init_completion -s || return
    else
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD-1]}
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
    fi
    local commands="info new prompt chat sessions history resume close delete modes mode config auth logout title archive unarchive status check trace serve providers provider agents help"
    local opts="--agent --token --cacert --http2 --cwd --color --json --yes --deny --fs --max-read
        --terminal --auth --timeout --agent-log --quiet --log-level --session --add-dir --mcp
        --mcp-http --mcp-sse --all-cwd --help --version --out --listen --tls-cert --tls-key
        --token-file --allow-origin --root --exposed --insecure-no-auth --allow-stdio-mcp
        --no-stdio-mcp --port-file --max-connections --max-message --high-water --idle-timeout
        --header-timeout --ping-interval --close-timeout --archived --system-prompt --only --no-prompt --mcp-local --provider --header --api-type --registry"
    # After 'acp trace ... --' or 'acp serve ... --': an agent's command line.
    local i
    for ((i = 1; i < cword; i++)); do
        if [[ ${words[i]} == -- ]]; then
            if ((cword == i + 1)); then
                COMPREPLY=($(compgen -c -- "$cur"))
            else
                COMPREPLY=($(compgen -f -- "$cur"))
            fi
            return
        fi
    done
    case $prev in
    --color) COMPREPLY=($(compgen -W "auto always never" -- "$cur")); return ;;
    --log-level) COMPREPLY=($(compgen -W "error warn info debug" -- "$cur")); return ;;
    --cwd | --add-dir | --root) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --archived) COMPREPLY=($(compgen -W "include only" -- "$cur")); return ;;
    --cacert | --agent-log | --out | --tls-cert | --tls-key | --token-file | --port-file | --system-prompt | --registry)
        COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --agent) COMPREPLY=($(compgen -c -- "$cur")); return ;;
    --token | --max-read | --auth | --timeout | --session | -s | --mcp | --mcp-http | --mcp-sse | \
        --listen | --allow-origin | --max-connections | --max-message | --high-water | \
        --idle-timeout | --header-timeout | --ping-interval | --close-timeout | --only | --mcp-local | --provider | --header | --api-type)
        return ;;
    esac
    if [[ $cur == --*=* ]]; then
        local opt=${cur%%=*} val=${cur#*=}
        case $opt in
        --color) COMPREPLY=($(compgen -P "$opt=" -W "auto always never" -- "$val")) ;;
        --log-level) COMPREPLY=($(compgen -P "$opt=" -W "error warn info debug" -- "$val")) ;;
        esac
        return
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return
    fi
    # The first word that is not an option or an option's value is the command.
    local have=
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
        --agent | --token | --cacert | --cwd | --max-read | --auth | --timeout | --agent-log | \
            --log-level | --session | -s | --add-dir | --mcp | --mcp-http | --mcp-sse | --out | \
            --listen | --tls-cert | --tls-key | --token-file | --allow-origin | --root | \
            --port-file | --max-connections | --max-message | --high-water | --idle-timeout | \
            --header-timeout | --ping-interval | --close-timeout | --system-prompt | --only | --mcp-local | --provider | --header | --api-type | --registry) ((i++)) ;;
        -*) ;;
        *) have=${words[i]}; break ;;
        esac
    done
    if [[ -z $have ]]; then
        COMPREPLY=($(compgen -W "$commands" -- "$cur"))
    elif [[ $have == help ]]; then
        COMPREPLY=($(compgen -W "$commands" -- "$cur"))
    elif [[ $have == trace && ${words[cword-1]} == show ]]; then
        COMPREPLY=($(compgen -f -- "$cur"))
    elif [[ $have == trace ]]; then
        COMPREPLY=($(compgen -W "show --out --" -- "$cur"))
    fi
}
complete -F _acp acp
