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

  const models = await client.models.list();
  console.log('models: ' + models.data.map((m) => m.id).join(','));

  try {
    await client.completions.create({ model, prompt, max_tokens: 4, regime: 'warp' });
  } catch (e) {
    console.log('bad regime: ' + e.status + ' ' + e.error.param);
  }
}
main().catch((e) => { console.error(e); process.exit(1); });
