#!/bin/sh
# A fake CLI agent for the tests, installed as `codex` or `claude`: it answers the login
# commands, records how it was started (arguments, prompt, directory) in its state directory,
# then replays the recorded session in `session.jsonl` there, line by line. Lines starting
# with `#` are actions instead of output:
#   #write PATH TEXT   write TEXT (and a newline) to PATH, relative to where it runs
#   #delete PATH       delete PATH
#   #last TEXT         write TEXT to the --output-last-message file
#   #stderr TEXT       print TEXT on stderr
#   #sleep SECONDS     sleep (its pid is in sleeping.pid first)
#   #exit CODE         stop with CODE
case "$(basename "$0")" in
  claude) state="$HOME/.claude" ;;
  *) state="$HOME/.codex" ;;
esac
if [ "$1" = "login" ]; then
  if [ "$2" = "status" ]; then
    if [ -f "$state/logged-in" ]; then echo "Logged in using ChatGPT"; exit 0; fi
    echo "Not logged in" >&2
    exit 1
  fi
  printf '\033[1mOpen https://auth.example.test/device\033[0m\n'
  echo "Enter this one-time code: ABCD-1234"
  touch "$state/logged-in"
  exit 0
fi
last=""
prev=""
for arg in "$@"; do
  if [ "$prev" = "--output-last-message" ]; then last="$arg"; fi
  prev="$arg"
done
printf '%s\n' "$@" > "$state/args.txt"
cat > "$state/prompt.txt"
pwd > "$state/cwd.txt"
while IFS= read -r line; do
  case "$line" in
    "#write "*)
      rest="${line#\#write }"
      path="${rest%% *}"
      mkdir -p "$(dirname "$path")"
      printf '%s\n' "${rest#* }" > "$path" 2>/dev/null || echo "write refused: $path" >&2
      ;;
    "#delete "*) rm -f "${line#\#delete }" ;;
    "#last "*) if [ -n "$last" ]; then printf '%s' "${line#\#last }" > "$last"; fi ;;
    "#stderr "*) echo "${line#\#stderr }" >&2 ;;
    "#sleep "*) echo $$ > "$state/sleeping.pid"; sleep "${line#\#sleep }" ;;
    "#exit "*) exit "${line#\#exit }" ;;
    *) printf '%s\n' "$line" ;;
  esac
done < "$state/session.jsonl"
