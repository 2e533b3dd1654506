/**
 * Draws a laid-out statechart as an SVG string. States carry `data-state` and edges `data-edge` (an arrow,
 * a stop mark or a legend entry), so the page's script highlights them by id; the edges a run took are
 * marked `taken` here, once, and the rest are drawn muted.
 */
import {
  edgeLabelText,
  STATECHART_TEXT,
  type PlacedEdge,
  type PlacedState,
  type StatechartLayout,
} from './statechart-layout.js';

/** Escapes text for HTML and SVG content and attribute values. */
export function escapeHtml(value: string): string {
  return value
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

const round = (value: number) => Math.round(value * 10) / 10;

function drawState(state: PlacedState, initialStates: ReadonlySet<string>, stopping: ReadonlySet<string>): string {
  const { x, y, width, height } = state;
  const classes = ['state', state.kind].join(' ');
  const title = `<title>${escapeHtml(state.id)}</title>`;
  if (state.kind === 'compound') {
    return `<g class="${classes}" data-state="${escapeHtml(state.id)}">${title}<rect x="${round(x)}" y="${round(y)}" width="${round(width)}" height="${round(height)}" rx="12"/><text class="compound-title" x="${round(x + 12)}" y="${round(y + 21)}">${escapeHtml(state.key)}</text></g>`;
  }
  const inner =
    state.kind === 'final'
      ? `<rect class="final-ring" x="${round(x + 3)}" y="${round(y + 3)}" width="${round(width - 6)}" height="${round(height - 6)}" rx="6"/>`
      : '';
  const initial = initialStates.has(state.id)
    ? `<circle class="initial-dot" cx="${round(x - 7)}" cy="${round(y + height / 2)}" r="4"/>`
    : '';
  // The text is centred in the box but for the room a stop mark takes at its right end.
  const room = stopping.has(state.id) ? STATECHART_TEXT.stopMarkWidth : 0;
  return `<g class="${classes}" data-state="${escapeHtml(state.id)}">${title}${initial}<rect x="${round(x)}" y="${round(y)}" width="${round(width)}" height="${round(height)}" rx="8"/>${inner}<text x="${round(x + (width - room) / 2)}" y="${round(y + height / 2 + 5)}" text-anchor="middle">${escapeHtml(state.key)}</text></g>`;
}

/** The edge's tooltip: its ends, each event with its guard, and how often the run took it. */
function edgeTitle(edge: PlacedEdge, count: number): string {
  const guards = [
    ...new Set(
      edge.transitions.map(
        (transition) => `${transition.event ?? 'always'}${transition.guard ? ` [${transition.guard}]` : ''}`,
      ),
    ),
  ];
  return `<title>${escapeHtml(`${edge.source} → ${edge.target}\n${guards.join('\n')}${count > 0 ? `\ntaken ${count}×` : ''}`)}</title>`;
}

const edgeClasses = (edge: PlacedEdge, count: number) =>
  ['edge', edge.drawing, edge.events.length === 0 ? 'eventless' : '', count > 0 ? 'taken' : '']
    .filter(Boolean)
    .join(' ');

function drawEdge(edge: PlacedEdge, count: number): string {
  if (edge.points.length < 2) return '';
  const path = edge.points
    .map((point, index) => `${index === 0 ? 'M' : 'L'}${round(point.x)} ${round(point.y)}`)
    .join(' ');
  let label = '';
  if (edge.label !== null && edgeLabelText(edge) !== '') {
    const { x, y, width, height } = edge.label;
    const lines = edge.label.text
      .split('\n')
      .map(
        (line, index) =>
          `<tspan x="${round(x + 4)}" y="${round(y + STATECHART_TEXT.fontSize + index * STATECHART_TEXT.lineHeight)}">${escapeHtml(line)}</tspan>`,
      )
      .join('');
    label = `<rect class="label-bg" x="${round(x)}" y="${round(y)}" width="${round(width)}" height="${round(height)}" rx="3"/><text class="edge-label">${lines}</text>`;
  }
  const badge =
    count > 1
      ? `<text class="edge-count" x="${round(edge.points[0]!.x + 4)}" y="${round(edge.points[0]!.y + 12)}">${count}×</text>`
      : '';
  return `<g class="${edgeClasses(edge, count)}" data-edge="${escapeHtml(edge.id)}" data-count="${count}">${edgeTitle(edge, count)}<path d="${path}" marker-end="url(#arrow)"/>${label}${badge}</g>`;
}

/** A stop: a mark at the right end of its state's box, in the room the layout left for it. */
function drawStop(edge: PlacedEdge, state: PlacedState | undefined, count: number): string {
  if (state === undefined) return '';
  const size = 10;
  const x = state.x + state.width - STATECHART_TEXT.stopMarkWidth + (STATECHART_TEXT.stopMarkWidth - size) / 2 - 3;
  const y = state.y + (state.height - size) / 2;
  return `<g class="${edgeClasses(edge, count)}" data-edge="${escapeHtml(edge.id)}" data-count="${count}">${edgeTitle(edge, count)}<rect x="${round(x)}" y="${round(y)}" width="${size}" height="${size}" rx="2"/></g>`;
}

const LEGEND_HEIGHT = 62;
// Running text is narrower than the layout's generous estimate; chips placed after it would float off.
const textWidth = (text: string) => Math.ceil(text.length * STATECHART_TEXT.characterWidth * 0.86);

/** The legend under the drawing: what a stop mark is, and the interruptions, one chip per state they leave. */
function drawLegend(layout: StatechartLayout, edgeCounts: Readonly<Record<string, number>>): string {
  const top = layout.height + 6;
  const stops = layout.edges.some((edge) => edge.drawing === 'stop');
  const interruptions = layout.edges.filter((edge) => edge.drawing === 'interruption');
  const parts: string[] = [];
  if (stops) {
    parts.push(
      `<g class="legend-stop"><rect x="20" y="${top + 5}" width="10" height="10" rx="2"/><text x="38" y="${top + 14}">stops the run from that state (to TERMINATED): a budget, the deadline, a denial, no progress… — the guards are in its tooltip</text></g>`,
    );
  }
  if (interruptions.length > 0) {
    const events = [...new Set(interruptions.flatMap((edge) => edge.events))];
    const lead = 'interruptions, from any state of';
    let x = 20;
    const y = top + 30;
    parts.push(`<text class="legend-text" x="${x}" y="${y + 15}">${escapeHtml(lead)}</text>`);
    x += textWidth(lead) + 8;
    for (const edge of interruptions) {
      const count = edgeCounts[edge.id] ?? 0;
      // A chip's own text in the layout's generous estimate, so it never overflows the chip.
      const width = Math.ceil(edge.source.length * STATECHART_TEXT.characterWidth) + 16;
      parts.push(
        `<g class="${edgeClasses(edge, count)}" data-edge="${escapeHtml(edge.id)}" data-count="${count}">${edgeTitle(edge, count)}<rect x="${x}" y="${y}" width="${width}" height="22" rx="11"/><text x="${x + width / 2}" y="${y + 15}" text-anchor="middle">${escapeHtml(edge.source)}</text></g>`,
      );
      x += width + 6;
    }
    const rest = `to ${interruptions[0]?.target ?? ''}: ${events.join(', ')}`;
    parts.push(`<text class="legend-text" x="${x + 2}" y="${y + 15}">${escapeHtml(rest)}</text>`);
  }
  return parts.length === 0 ? '' : `<g class="legend">${parts.join('')}</g>`;
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
  const stopping = new Set(layout.edges.filter((edge) => edge.drawing === 'stop').map((edge) => edge.source));
  const states = layout.states.map((state) => drawState(state, initialStates, stopping)).join('');
  const byId = new Map(layout.states.map((state) => [state.id, state]));
  // Taken edges last, so they are drawn over the rest.
  const ordered = [...layout.edges].sort(
    (left, right) => Number((edgeCounts[left.id] ?? 0) > 0) - Number((edgeCounts[right.id] ?? 0) > 0),
  );
  const edges = ordered
    .map((edge) => {
      const count = edgeCounts[edge.id] ?? 0;
      return edge.drawing === 'route'
        ? drawEdge(edge, count)
        : edge.drawing === 'stop'
          ? drawStop(edge, byId.get(edge.source), count)
          : '';
    })
    .join('');
  const legend = drawLegend(layout, edgeCounts);
  const height = layout.height + (legend === '' ? 0 : LEGEND_HEIGHT);
  // Sized in user units, so a thick highlighted edge keeps a normal arrowhead.
  const marker = (id: string) =>
    `<marker id="${id}" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="9" markerHeight="9" orient="auto-start-reverse"><path d="M0 0 L10 5 L0 10 z"/></marker>`;
  return `<svg id="statechart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${layout.width} ${height}" width="${layout.width}" height="${height}" style="max-width: ${layout.width}px" preserveAspectRatio="xMinYMin meet" role="img" aria-label="The loop statechart"><defs>${marker('arrow')}</defs><g class="states">${states}</g><g class="edges">${edges}</g>${legend}</svg>`;
}
