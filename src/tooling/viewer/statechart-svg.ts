/**
 * Draws a laid-out statechart as an SVG string. States carry `data-state` and edges `data-edge`, so
 * the page's script highlights them by id; the edges a run took are marked `taken` here, once.
 */
import { edgeLabelText, type PlacedEdge, type PlacedState, type StatechartLayout } from './statechart-layout.js';

/** Escapes text for HTML and SVG content and attribute values. */
export function escapeHtml(value: string): string {
  return value.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;').replaceAll("'", '&#39;');
}

const round = (value: number) => Math.round(value * 10) / 10;

function drawState(state: PlacedState, initialStates: ReadonlySet<string>): string {
  const { x, y, width, height } = state;
  const classes = ['state', state.kind].join(' ');
  const title = `<title>${escapeHtml(state.id)}</title>`;
  if (state.kind === 'compound') {
    return `<g class="${classes}" data-state="${escapeHtml(state.id)}">${title}<rect x="${round(x)}" y="${round(y)}" width="${round(width)}" height="${round(height)}" rx="12"/><text class="compound-title" x="${round(x + 12)}" y="${round(y + 20)}">${escapeHtml(state.key)}</text></g>`;
  }
  const inner = state.kind === 'final' ? `<rect class="final-ring" x="${round(x + 3)}" y="${round(y + 3)}" width="${round(width - 6)}" height="${round(height - 6)}" rx="6"/>` : '';
  const initial = initialStates.has(state.id) ? `<circle class="initial-dot" cx="${round(x - 7)}" cy="${round(y + height / 2)}" r="4"/>` : '';
  return `<g class="${classes}" data-state="${escapeHtml(state.id)}">${title}${initial}<rect x="${round(x)}" y="${round(y)}" width="${round(width)}" height="${round(height)}" rx="8"/>${inner}<text x="${round(x + width / 2)}" y="${round(y + height / 2 + 4)}" text-anchor="middle">${escapeHtml(state.key)}</text></g>`;
}

function drawEdge(edge: PlacedEdge, count: number): string {
  if (edge.points.length < 2) return '';
  const path = edge.points.map((point, index) => `${index === 0 ? 'M' : 'L'}${round(point.x)} ${round(point.y)}`).join(' ');
  const classes = ['edge', edge.events.length === 0 ? 'eventless' : '', count > 0 ? 'taken' : ''].filter(Boolean).join(' ');
  const guards = [...new Set(edge.transitions.map((transition) => `${transition.event ?? 'always'}${transition.guard ? ` [${transition.guard}]` : ''}`))];
  const title = `<title>${escapeHtml(`${edge.source} → ${edge.target}\n${guards.join('\n')}${count > 0 ? `\ntaken ${count}×` : ''}`)}</title>`;
  let label = '';
  if (edge.label !== null && edgeLabelText(edge) !== '') {
    const { x, y, width, height } = edge.label;
    const lines = edge.label.text.split('\n').map((line, index) => `<tspan x="${round(x + 3)}" y="${round(y + 12 + index * 15)}">${escapeHtml(line)}</tspan>`).join('');
    label = `<rect class="label-bg" x="${round(x)}" y="${round(y)}" width="${round(width)}" height="${round(height)}" rx="3"/><text class="edge-label">${lines}</text>`;
  }
  const badge = count > 1 ? `<text class="edge-count" x="${round(edge.points[0]!.x + 4)}" y="${round(edge.points[0]!.y + 12)}">${count}×</text>` : '';
  return `<g class="${classes}" data-edge="${escapeHtml(edge.id)}" data-count="${count}">${title}<path d="${path}" marker-end="url(#arrow)"/>${label}${badge}</g>`;
}

/**
 * The statechart as an `<svg>` element; `edgeCounts` marks the edges a run took.
 * @example
 * const svg = statechartSvg(await layoutStatechart(statechartGraph(loopMachine)), { 'READY->RUNNING': 1 });
 */
export function statechartSvg(layout: StatechartLayout, edgeCounts: Readonly<Record<string, number>> = {}): string {
  const initialStates = new Set(layout.states.flatMap((state) => (state.initial === null ? [] : [state.initial])));
  const topLevel = layout.states.find((state) => state.parent === null);
  if (topLevel !== undefined) initialStates.add(topLevel.id);
  const states = layout.states.map((state) => drawState(state, initialStates)).join('');
  // Taken edges last, so they are drawn over the rest.
  const ordered = [...layout.edges].sort((left, right) => Number((edgeCounts[left.id] ?? 0) > 0) - Number((edgeCounts[right.id] ?? 0) > 0));
  const edges = ordered.map((edge) => drawEdge(edge, edgeCounts[edge.id] ?? 0)).join('');
  // Sized in user units, so a thick highlighted edge keeps a normal arrowhead.
  const marker = (id: string) => `<marker id="${id}" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="9" markerHeight="9" orient="auto-start-reverse"><path d="M0 0 L10 5 L0 10 z"/></marker>`;
  return `<svg id="statechart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${layout.width} ${layout.height}" width="${layout.width}" height="${layout.height}" preserveAspectRatio="xMinYMin meet" role="img" aria-label="The loop statechart"><defs>${marker('arrow')}</defs><g class="states">${states}</g><g class="edges">${edges}</g></svg>`;
}
