// Flat config: typescript-eslint's recommended rules, plus the house rules that keep the
// statechart pure (no clock or randomness in machines/, guards/, actions/).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // bench/suite is its own package (bench/package.json): it imports the peer frameworks the root never installs.
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      'coverage/**',
      '.readme-snippets*/**',
      'bench/suite/**',
      'bench/node_modules/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    files: ['machines/**/*.ts', 'guards/**/*.ts', 'actions/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "MemberExpression[object.name='Date'][property.name='now']",
          message: 'Time enters the machine only through events.',
        },
        { selector: "NewExpression[callee.name='Date']", message: 'Time enters the machine only through events.' },
        {
          selector: "MemberExpression[object.name='Math'][property.name='random']",
          message: 'The machine is deterministic; randomness belongs to the driver.',
        },
      ],
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['../src/*', '../src'], message: 'machines/, guards/ and actions/ never import the runtime.' },
          ],
        },
      ],
    },
  },

  // The layers of src/ (the architecture test checks the same on the whole graph, cycles included).
  ...layerRules(),
  {
    // The core runs in a browser, Bun and Deno too: Node's globals only through src/engine/host-runtime.ts's probe.
    files: [
      'src/contracts/**/*.ts',
      'src/engine/**/*.ts',
      'src/testing/**/*.ts',
      'src/index.ts',
      'machines/**/*.ts',
      'guards/**/*.ts',
      'actions/**/*.ts',
    ],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-globals': [
        'error',
        ...['Buffer', 'process', 'setImmediate', 'clearImmediate', 'global', 'require', '__dirname', '__filename'].map(
          (name) => ({
            name,
            message:
              'The core runs in any standard runtime: not a Node global here (src/engine/host-runtime.ts probes the runtime).',
          }),
        ),
      ],
    },
  },
);

/** Layer rules: contracts ← engine ← adapters ← tooling, the statechart below them all; each package in its own folder. */
function layerRules() {
  const upward = (layers, message) => ({ regex: `(^|/)(${layers.join('|')})/`, message });
  const peers = (except) =>
    [
      'openai',
      '@ai-sdk/provider',
      'ai-sdk-provider-v2',
      '@modelcontextprotocol/sdk',
      'better-sqlite3',
      'pg',
      '@dbos-inc/dbos-sdk',
      '@statelyai/inspect',
      'ws',
      'elkjs',
    ]
      .filter((name) => !except.includes(name))
      .map((name) => ({
        regex: `^${name.replace('/', '\\/')}(/|$)`,
        message: `${name} is imported in its adapter's folder only.`,
      }));
  const nodeBuiltins = { regex: '^node:', message: 'The core runs in any standard runtime: no Node built-in here.' };
  const rule = (files, patterns, ignores = []) => ({
    files,
    ignores: ['**/*.test.ts', ...ignores],
    rules: { 'no-restricted-imports': ['error', { patterns }] },
  });
  const adapters = ['openai', 'ai-sdk', 'mcp', 'cassette', 'sqlite', 'postgres', 'dbos', 'stately', 'node'];
  const adapterPackages = {
    openai: ['openai'],
    'ai-sdk': ['@ai-sdk/provider', 'ai-sdk-provider-v2'],
    mcp: ['@modelcontextprotocol/sdk'],
    sqlite: ['better-sqlite3'],
    postgres: ['pg'],
    dbos: ['@dbos-inc/dbos-sdk'],
    stately: ['@statelyai/inspect', 'ws'],
    cassette: [],
    node: [],
  };
  return [
    rule(
      ['src/contracts/**/*.ts'],
      [
        upward(
          ['engine', 'adapters', 'testing', 'tooling'],
          'contracts/ holds types and schemas only: it imports nothing above it.',
        ),
        nodeBuiltins,
        ...peers([]),
      ],
    ),
    rule(
      ['src/engine/**/*.ts'],
      [
        upward(['adapters', 'testing', 'tooling'], 'The engine never imports an adapter, the test doubles or tooling.'),
        nodeBuiltins,
        ...peers([]),
      ],
    ),
    rule(
      ['src/testing/**/*.ts'],
      [upward(['adapters', 'tooling'], 'loopstate/testing builds on the core only.'), nodeBuiltins, ...peers([])],
    ),
    ...adapters.map((name) =>
      rule(
        [`src/adapters/${name}/**/*.ts`],
        [
          // One declared exception: dbos journals in the postgres store, through its entry.
          {
            regex: `^\\.\\./(?!${name}/|\\.\\.${name === 'dbos' ? '|postgres/index\\.js$' : ''})[a-z-]+/`,
            message: 'Adapters never import each other (dbos may use postgres through its index).',
          },
          upward(['testing', 'tooling'], 'Adapters build on the core only.'),
          ...peers(adapterPackages[name]),
        ],
      ),
    ),
    rule(
      ['src/tooling/**/*.ts'],
      [
        { regex: '(^|/)engine/', message: 'Tooling reaches the engine through loopstate/internal (src/internal.ts).' },
        {
          regex: '(^|/)adapters/[a-z-]+/(?!index\\.js$)',
          message: 'Tooling imports an adapter through its entry (its index.ts).',
        },
        ...peers([]),
      ],
    ),
  ];
}
