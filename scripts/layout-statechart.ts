/**
 * Lays the loop statechart out with elkjs at build time and writes the result to
 * src/tooling/viewer/statechart-layout.data.ts (`npm run layout`; the page gets finished coordinates, so it
 * needs no script from anywhere, and the package needs no elkjs). Compound states hold their children (`hierarchyHandling: INCLUDE_CHILDREN`)
 * and every edge is routed in root coordinates (`edgeCoords: ROOT`), so edges between levels need no
 * offset arithmetic; node positions are made absolute here.
 */
import elkBundled from 'elkjs/lib/elk.bundled.js';
import type { ELK, ELKConstructorArguments, ElkExtendedEdge, ElkLabel, ElkNode } from 'elkjs/lib/elk-api.js';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loopMachine } from '../machines/index.js';
import { statechartGraph, type StatechartGraph, type StatechartState } from '../src/tooling/viewer/statechart-graph.js';
import { edgeCrossings } from '../src/tooling/viewer/edge-crossings.js';
import {
  edgeDrawings,
  edgeLabelText,
  STATECHART_TEXT,
  type StatechartLayout,
} from '../src/tooling/viewer/statechart-layout.js';

const { characterWidth: CHARACTER_WIDTH, lineHeight: LINE_HEIGHT, stopMarkWidth: STOP_MARK_WIDTH } = STATECHART_TEXT;
const STATE_HEIGHT = 36;
const STATE_PADDING = 18;
const COMPOUND_TITLE = 30;

// elkjs is CommonJS (`module.exports = ELK`) typed as if it had an ES default export: the default import is the constructor.
const ElkConstructor = elkBundled as unknown as new (args?: ELKConstructorArguments) => ELK;

const textWidth = (text: string) => Math.ceil(text.length * CHARACTER_WIDTH);

const ROOT_OPTIONS: Record<string, string> = {
  'elk.algorithm': 'layered',
  'elk.direction': 'DOWN',
  'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
  'elk.json.edgeCoords': 'ROOT',
  'elk.edgeRouting': 'ORTHOGONAL',
  // Fewest crossings found on this machine: the thorough sweep, and cycles broken in definition order.
  'elk.layered.thoroughness': '100',
  'elk.layered.cycleBreaking.strategy': 'MODEL_ORDER',
  'elk.layered.spacing.nodeNodeBetweenLayers': '34',
  'elk.spacing.nodeNode': '26',
  'elk.spacing.edgeNode': '14',
  'elk.spacing.edgeEdge': '10',
  'elk.layered.spacing.edgeNodeBetweenLayers': '14',
  'elk.edgeLabels.placement': 'CENTER',
  'elk.padding': '[top=16,left=16,bottom=16,right=16]',
};

/**
 * Positions every state and routes every edge of `graph`.
 * @example
 * const layout = await layoutStatechart(statechartGraph(loopMachine));
 * layout.states.find((state) => state.id === 'RUNNING.deciding') // { x, y, width, height, ... }
 */
export async function layoutStatechart(graph: StatechartGraph): Promise<StatechartLayout> {
  const byParent = new Map<string | null, StatechartState[]>();
  for (const state of graph.states) byParent.set(state.parent, [...(byParent.get(state.parent) ?? []), state]);
  const firstState = byParent.get(null)?.[0]?.id;
  const drawings = edgeDrawings(graph);
  // A state with a stop mark is wider by the mark, drawn inside its box.
  const stopping = new Set(graph.edges.filter((edge) => drawings.get(edge.id) === 'stop').map((edge) => edge.source));
  const toElk = (state: StatechartState): ElkNode => {
    const children = byParent.get(state.id) ?? [];
    if (children.length === 0) {
      // The start at the top and the final state at the bottom, whatever the cycles between them.
      const layer =
        state.parent === null ? (state.id === firstState ? 'FIRST' : state.kind === 'final' ? 'LAST' : null) : null;
      return {
        id: state.id,
        width: textWidth(state.key) + STATE_PADDING * 2 + (stopping.has(state.id) ? STOP_MARK_WIDTH : 0),
        height: STATE_HEIGHT,
        labels: [{ text: state.key }],
        ...(layer === null ? {} : { layoutOptions: { 'elk.layered.layering.layerConstraint': layer } }),
      };
    }
    return {
      id: state.id,
      labels: [{ text: state.key }],
      layoutOptions: { 'elk.padding': `[top=${COMPOUND_TITLE + 8},left=14,bottom=14,right=14]` },
      children: children.map(toElk),
    };
  };
  // Only arrows are laid out: folded edges are drawn as stop marks and a legend entry.
  const edges: ElkExtendedEdge[] = graph.edges
    .filter((edge) => drawings.get(edge.id) === 'route')
    .map((edge) => {
      const text = edgeLabelText(edge);
      const lines = text === '' ? [] : text.split('\n');
      const labels: ElkLabel[] =
        lines.length === 0
          ? []
          : [
              {
                id: `${edge.id}#label`,
                text,
                width: Math.max(...lines.map(textWidth)) + 6,
                height: lines.length * LINE_HEIGHT + 2,
              },
            ];
      return { id: edge.id, sources: [edge.source], targets: [edge.target], labels };
    });
  const elk = new ElkConstructor();
  const laid: ElkNode = await elk.layout<ElkNode>({
    id: 'root',
    layoutOptions: ROOT_OPTIONS,
    children: (byParent.get(null) ?? []).map(toElk),
    edges,
  });

  const placed = new Map<string, { x: number; y: number; width: number; height: number }>();
  const place = (node: ElkNode, offsetX: number, offsetY: number) => {
    for (const child of node.children ?? []) {
      const x = offsetX + (child.x ?? 0);
      const y = offsetY + (child.y ?? 0);
      placed.set(child.id, { x, y, width: child.width ?? 0, height: child.height ?? 0 });
      place(child, x, y);
    }
  };
  place(laid, 0, 0);
  const laidEdges = new Map<string, ElkExtendedEdge>();
  const collect = (node: ElkNode) => {
    for (const edge of node.edges ?? []) laidEdges.set(edge.id, edge);
    for (const child of node.children ?? []) collect(child);
  };
  collect(laid);
  return {
    width: Math.ceil(laid.width ?? 0),
    height: Math.ceil(laid.height ?? 0),
    states: graph.states.map((state) => {
      const box = placed.get(state.id);
      if (box === undefined) throw new Error(`elkjs placed no box for state ${state.id}`);
      return { ...state, ...box };
    }),
    edges: graph.edges.map((edge) => {
      const routed = laidEdges.get(edge.id);
      const points = (routed?.sections ?? []).flatMap((section) => [
        section.startPoint,
        ...(section.bendPoints ?? []),
        section.endPoint,
      ]);
      const label = routed?.labels?.[0];
      return {
        ...edge,
        drawing: drawings.get(edge.id) ?? 'route',
        points: points.map(({ x, y }) => ({ x, y })),
        label:
          label === undefined
            ? null
            : {
                text: label.text ?? '',
                x: label.x ?? 0,
                y: label.y ?? 0,
                width: label.width ?? 0,
                height: label.height ?? 0,
              },
      };
    }),
  };
}

/** The layout of the machine as it is now, serialised the way the data module ships it. */
export async function statechartLayoutModule(): Promise<string> {
  const layout = await layoutStatechart(statechartGraph(loopMachine));
  return [
    '// Generated by `npm run layout` (scripts/layout-statechart.ts) from the loop statechart; do not edit.',
    "import type { StatechartLayout } from './statechart-layout.js';",
    '',
    `export const STATECHART_LAYOUT: StatechartLayout = ${JSON.stringify(layout)};`,
    '',
  ].join('\n');
}

export const LAYOUT_DATA_FILE = fileURLToPath(
  new URL('../src/tooling/viewer/statechart-layout.data.ts', import.meta.url),
);

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(LAYOUT_DATA_FILE, await statechartLayoutModule());
  const { edges } = await layoutStatechart(statechartGraph(loopMachine));
  console.log(
    `wrote ${LAYOUT_DATA_FILE}: ${edges.filter((edge) => edge.drawing === 'route').length} arrows, ${edgeCrossings(edges)} crossings`,
  );
}
