// GPT-2's ids for a UTF-8 file from two independent JavaScript encoders.
const fs = require('fs');
const text = fs.readFileSync(process.argv[2], 'utf8');
const { encode } = require('gpt-3-encoder');
const { getEncoding } = require('js-tiktoken');
console.log(JSON.stringify({
  gpt3encoder: encode(text),
  tiktoken: getEncoding('gpt2').encode(text),
}));
