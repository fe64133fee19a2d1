// The official OpenAI client against `fbt serve`: completions, chat and
// streaming of both, greedy, in the regime given. Prints what came back, a
// line each, for FileCheck.
//   node client.js BASE_URL MODEL REGIME PROMPT
const OpenAI = require('openai');
const [base, model, regime, prompt] = process.argv.slice(2);
const client = new OpenAI({ baseURL: base, apiKey: 'unused' });

async function main() {
  const c = await client.completions.create(
      { model, prompt, max_tokens: 12, temperature: 0, regime });
  console.log('completion: ' + JSON.stringify(c.choices[0].text) +
              ' finish=' + c.choices[0].finish_reason +
              ' usage=' + c.usage.completion_tokens);

  let streamed = '';
  const s = await client.completions.create(
      { model, prompt, max_tokens: 12, temperature: 0, regime, stream: true });
  for await (const chunk of s) streamed += chunk.choices[0].text;
  console.log('streamed equals: ' + (streamed === c.choices[0].text));

  const chat = await client.chat.completions.create({
    model, temperature: 0, max_tokens: 8, regime,
    messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: prompt }],
  });
  console.log('chat role: ' + chat.choices[0].message.role +
              ' object=' + chat.object);

  let chatStreamed = '';
  const cs = await client.chat.completions.create({
    model, temperature: 0, max_tokens: 8, regime, stream: true,
    messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: prompt }],
  });
  for await (const chunk of cs) chatStreamed += chunk.choices[0].delta.content || '';
  console.log('chat streamed equals: ' + (chatStreamed === chat.choices[0].message.content));

  // Log-probabilities: one per generated token, the greedy token the
  // likeliest of its alternatives, and the same when streamed.
  const lp = await client.chat.completions.create({
    model, temperature: 0, max_tokens: 8, regime, logprobs: true, top_logprobs: 3,
    messages: [{ role: 'user', content: prompt }],
  });
  const content = lp.choices[0].logprobs.content;
  const bytes = content.every((t) => t.bytes.length >= 1);
  const greedyTop = content.every((t) => t.top_logprobs.length === 3 &&
      t.top_logprobs[0].logprob === t.logprob && t.logprob <= 0);
  console.log('chat logprobs: ' + content.length + ' tokens, bytes ' + bytes +
              ', greedy top ' + greedyTop);
  const lpc = await client.completions.create(
      { model, prompt, max_tokens: 6, temperature: 0, regime, logprobs: 2 });
  const l = lpc.choices[0].logprobs;
  console.log('completion logprobs: ' + l.tokens.length + ' tokens, ' +
              l.top_logprobs.filter((t) => Object.keys(t).length >= 1).length + ' with alternatives');

  // The prompt scored, as evaluation harnesses ask for it (echo, no new tokens).
  const scored = await client.completions.create(
      { model, prompt, max_tokens: 0, echo: true, logprobs: 0, regime: 'standard' });
  const sl = scored.choices[0].logprobs;
  console.log('echo: ' + (scored.choices[0].text === prompt) + ', ' + sl.tokens.length +
              ' prompt tokens scored, all <= 0: ' + sl.token_logprobs.every((x) => x <= 0));

  // Structured output: a reply that parses and follows its schema (the
  // schema's bounds keep a briefly trained model's reply short).
  const person = {
    type: 'object', additionalProperties: false, required: ['name', 'kind', 'tags'],
    properties: {
      name: { type: 'string', maxLength: 8 },
      kind: { enum: ['cat', 'dog', null] },
      tags: { type: 'array', items: { type: 'boolean' }, maxItems: 2 },
    },
  };
  const js = await client.chat.completions.create({
    model, temperature: 0, max_tokens: 200, regime,
    messages: [{ role: 'user', content: prompt }],
    response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: person } },
  });
  const parsed = JSON.parse(js.choices[0].message.content);
  const follows = Object.keys(parsed).join(',') === 'name,kind,tags' &&
      typeof parsed.name === 'string' && parsed.name.length <= 8 &&
      ['cat', 'dog', null].includes(parsed.kind) && parsed.tags.length <= 2 &&
      parsed.tags.every((t) => typeof t === 'boolean');
  console.log('json_schema: ' + js.choices[0].finish_reason + ', follows the schema: ' + follows);

  const models = await client.models.list();
  console.log('models: ' + models.data.map((m) => m.id).join(','));

  try {
    await client.completions.create({ model, prompt, max_tokens: 4, regime: 'warp' });
  } catch (e) {
    console.log('bad regime: ' + e.status + ' ' + e.error.param);
  }
}
main().catch((e) => { console.error(e); process.exit(1); });
