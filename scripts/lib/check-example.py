#!/usr/bin/env python3
# Checks that an output example in a document is what a program printed: the indented block after the line holding
# MARKER in DOC, each of its lines in order among the lines of OUTPUT, once both are rid of what differs from run to
# run (times, temporary names, process ids, link-local addresses, durations). Lines of the output the example leaves
# out may be skipped; a line of the example that the output does not have, in that order, is an error naming it.
# Usage: check-example.py DOC MARKER OUTPUT
import re, sys

VARIABLE = [
    (re.compile(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z'), 'TIME'),
    (re.compile(r'/tmp/reach-try\.[A-Za-z0-9]+'), '/tmp/reach-try.X'),
    (re.compile(r'reach-try-\d+'), 'reach-try-N'),
    (re.compile(r'/dev/pts/\d+'), '/dev/pts/N'),
    (re.compile(r'fe80::[0-9a-f:]+'), 'fe80::X'),
    (re.compile(r'pid \d+'), 'pid N'),
    (re.compile(r'\b\d+(\.\d+)? (ms|s)\b'), 'N \\2'),
]

def normal(line):
    for pattern, stand_in in VARIABLE:
        line = pattern.sub(stand_in, line)
    return line.rstrip()

def example(doc, marker):
    lines = open(doc, encoding='utf-8').read().split('\n')
    start = next((i for i, l in enumerate(lines) if marker in l), None)
    if start is None:
        sys.exit(f'check-example: {doc} has no line with "{marker}"')
    block = []
    for l in lines[start + 1:]:
        if l.startswith('    '):
            block.append(l[4:])
        elif l.strip() == '':
            if block: block.append('')
        elif block:
            break
    block = [l for l in block if l.strip()]
    if not block:
        sys.exit(f'check-example: {doc}: no indented block after "{marker}"')
    return block

doc, marker, output = sys.argv[1:4]
shown = [normal(l) for l in example(doc, marker)]
printed = [normal(l) for l in open(output, encoding='utf-8', errors='replace').read().split('\n')]
at = 0
for line in shown:
    try:
        at = printed.index(line, at) + 1
    except ValueError:
        sys.exit(f'check-example: {doc}: this line of the example after "{marker}" is not what the program printed '
                 f'(in that order):\n  {line}')
print(f'check-example: {doc}: the {len(shown)} lines of the example after "{marker}" are what the program printed')
