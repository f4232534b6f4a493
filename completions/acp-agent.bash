# SPDX-License-Identifier: Apache-2.0
# bash completion for acp-agent(1). Installed as share/bash-completion/completions/acp-agent.
_acp_agent() {
    local cur prev
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    local opts="--engine --store --auth --lease-ttl --max-read --log-level --unstable-off --help
        --version --base-url --model --api-key-env --system-prompt --max-tokens --max-turns
        --context-tokens --listen --tls-cert --tls-key --token-file --allow-origin --root
        --exposed --insecure-no-auth --allow-stdio-mcp --no-stdio-mcp --port-file
        --max-connections --max-message --high-water --idle-timeout --header-timeout
        --ping-interval --close-timeout --check-client --check-report --check-json"
    local features="all fork title archive status system-prompt subagents mcp-acp providers auth-status"
    local opt=$prev val=$cur pre=
    if [[ $cur == --*=* ]]; then
        opt=${cur%%=*} val=${cur#*=} pre="$opt="
    fi
    case $opt in
    --engine) COMPREPLY=($(compgen -P "$pre" -W "echo openai" -- "$val")); return ;;
    --log-level) COMPREPLY=($(compgen -P "$pre" -W "error warn info debug" -- "$val")); return ;;
    --unstable-off) COMPREPLY=($(compgen -P "$pre" -W "$features" -- "$val")); return ;;
    --root) COMPREPLY=($(compgen -P "$pre" -d -- "$val")); return ;;
    --store | --system-prompt | --check-report | --tls-cert | --tls-key | --token-file | --port-file)
        COMPREPLY=($(compgen -P "$pre" -f -- "$val")); return ;;
    --api-key-env) COMPREPLY=($(compgen -P "$pre" -v -- "$val")); return ;;
    --auth) COMPREPLY=($(compgen -P "$pre" -W "env:" -- "$val")); return ;;
    --lease-ttl | --max-read | --base-url | --model | --max-tokens | --max-turns | \
        --context-tokens | --listen | --allow-origin | --max-connections | --max-message | \
        --high-water | --idle-timeout | --header-timeout | --ping-interval | --close-timeout)
        return ;;
    esac
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -F _acp_agent acp-agent
