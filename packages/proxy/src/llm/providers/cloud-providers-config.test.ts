// The llm block's bedrock, gemini and vertex providers as the loader reads them: their settings and
// defaults in the IR, and the mistakes checkLlm names.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { issues, llm, providers } from './test-support.ts';

describe('bedrock, gemini and vertex in the llm block', () => {
  test('settings and defaults: awsRegion us-east-1, vertexRegion global', () => {
    const got = providers(
      llm(`  - {name: a, provider: bedrock}
  - {name: b, provider: bedrock, params: {awsRegion: eu-central-1, model: "amazon.nova-pro-v1:0"}}
  - {name: c, provider: gemini, params: {apiKey: k}}
  - {name: d, provider: vertex, params: {vertexProject: p}}
  - {name: e, provider: vertex, params: {vertexProject: p, vertexRegion: us-east5}}
`),
    );
    assert.deepEqual(
      got.map((p) => [p.kind, p.name, p.settings, p.model]),
      [
        ['bedrock', 'bedrock', { region: 'us-east-1' }, undefined],
        ['bedrock', 'bedrock', { region: 'eu-central-1' }, 'amazon.nova-pro-v1:0'],
        ['gemini', 'gemini', {}, undefined],
        ['vertexAI', 'vertexAI', { project: 'p', region: 'global' }, undefined],
        ['vertexAI', 'vertexAI', { project: 'p', region: 'us-east5' }, undefined],
      ],
    );
  });

  test('vertex needs a project; a provider param on another provider is named', () => {
    assert.deepEqual(
      issues(
        llm(`  - {name: a, provider: vertex}
  - {name: b, provider: gemini, params: {awsRegion: us-west-2}}
`),
      ),
      [
        'llm.models[0].params: the vertex provider needs params.vertexProject (missing field "params")',
        'llm.models[1].params.awsRegion: awsRegion is for the bedrock provider',
      ],
    );
  });
});
