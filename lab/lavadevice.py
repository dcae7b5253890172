"""A LAVA device dictionary rendered as lava-server renders one for a job:
jinja2 over the device's template (lab/lava/devices/<name>.jinja2) and the
device types it extends, with the job's context as the variables.

make lava-run runs this in its own venv (python -m lab.lavadevice, a JSON
request on stdin, the YAML on stdout): the harness's Python need not have
jinja2.
"""
import json
import sys
from pathlib import Path


def render(template: str, dirs: list[Path], context: dict) -> str:
    """template (e.g. qemu-01.jinja2) found in dirs, first first; a name
    that none has, or one that extends a type none has, raises jinja2's
    TemplateNotFound."""
    import jinja2
    env = jinja2.Environment(loader=jinja2.FileSystemLoader([str(d) for d in dirs]),
                             trim_blocks=True, autoescape=False)
    return env.get_template(template).render(**context)


def main() -> int:
    req = json.load(sys.stdin)
    try:
        sys.stdout.write(render(req["template"], [Path(d) for d in req["dirs"]],
                                req["context"]))
    except Exception as e:   # jinja2's errors: one line for the harness to say
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
