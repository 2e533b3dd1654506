/**
 * A verify report in words (for people) and as JSON (for CI), with `Infinity` written as the string
 * "Infinity" since JSON has no such number.
 */
import type { LoopLimits } from '../../../machines/types.js';
import type { PathStep } from './graph-analysis.js';
import type { VerifyReport } from './verify-loop.js';
import type { WorstCaseFigure } from './worst-case.js';
import { groupDigits } from './group-digits.js';

/** Version of the `--json` shape; bumped when a field changes meaning or goes away. */
export const VERIFY_REPORT_VERSION = 1;

export function reportJson(report: VerifyReport, file: string): string {
  const document = { schemaVersion: VERIFY_REPORT_VERSION, file, ...report };
  return JSON.stringify(
    document,
    (_key, value: unknown) => (typeof value === 'number' && !Number.isFinite(value) ? String(value) : value),
    2,
  );
}

const number = (value: number) => (Number.isFinite(value) ? groupDigits(value) : 'Infinity');

function limitsLine(limits: LoopLimits): string {
  const names: Array<keyof LoopLimits> = [
    'maxSteps',
    'maxStepsPerTask',
    'maxRetries',
    'maxTransportAttempts',
    'maxTransportRetries',
    'maxToolCalls',
    'maxToolCallsPerReply',
    'maxInputTokens',
    'maxOutputTokens',
    'maxCostUsd',
    'deadlineMs',
  ];
  return names
    .map(
      (name) =>
        `${name} ${name === 'maxCostUsd' && Number.isFinite(limits[name]) ? `$${limits[name]}` : number(limits[name])}`,
    )
    .join(', ');
}

function figure(name: string, value: WorstCaseFigure, money = false): string {
  const shown =
    value.value === null
      ? value.formula.startsWith('unknown')
        ? 'unknown'
        : 'unbounded'
      : `${value.plusOneCall ? '≤ ' : ''}${money ? `$${Number(value.value.toFixed(6))}` : number(value.value)}${value.plusOneCall ? ' + one call' : ''}`;
  return `  ${name.padEnd(14)}${shown.padEnd(22)}${value.formula}`;
}

function steps(
  path: readonly PathStep[],
  from = 1,
  width = Math.max(0, ...path.map((step) => step.state.length)),
): string[] {
  return path.map(
    (step, index) => `    ${String(from + index).padStart(3)}. ${step.state.padEnd(width)}  ${step.outcome}`,
  );
}

export function formatReport(report: VerifyReport, file: string): string {
  const { explored, coverage, model } = report;
  const price =
    model.price === null
      ? 'no price'
      : `$${model.price.inputPerMillion} / $${model.price.outputPerMillion} per million input / output tokens`;
  const lines = [
    `loopstate verify: ${file}`,
    `  model ${model.id} (${price})`,
    `  limits: ${limitsLine(report.limits)}`,
    '',
    `explored ${number(explored.states)} abstract states and ${number(explored.transitions)} transitions in ${(explored.elapsedMs / 1000).toFixed(1)} s (${number(explored.statesPerSecond)} states/s), ${explored.scaledTo === null ? "exactly, at the loop's own limits" : `SCALED DOWN to maxSteps ${explored.scaledTo.maxSteps} (see notes)`}`,
    ...(explored.reductions.length === 0
      ? []
      : [
          'reductions (equivalent states merged, equivalent outcomes left out; no figure below changes):',
          ...explored.reductions.map((reduction) => `  ${reduction}`),
        ]),
    `transition coverage: ${coverage.fired} / ${coverage.total} transition definitions of the statechart (${coverage.percent}%)`,
    `reachable stop reasons: ${report.stopReasons.join(', ')}`,
    '',
    'worst case, implied by the limits and prices (the call that crosses a budget is let stand, the next one refused):',
    figure('model calls', report.worstCase.modelCalls),
    figure('tool calls', report.worstCase.toolCalls),
    figure('input tokens', report.worstCase.inputTokens),
    figure('output tokens', report.worstCase.outputTokens),
    figure('cost', report.worstCase.costUsd, true),
  ];
  for (const note of report.notes) lines.push(`note: ${note}`);
  lines.push('');
  const checked =
    'every reachable state reaches TERMINATED with a stop reason, no destructive tool runs without approval, no budget is crossed by more than one call';
  const timed = Number.isFinite(report.limits.deadlineMs);
  if (report.violations.length === 0) {
    lines.push(
      timed
        ? `bounded: no run goes on for ever (the state graph has no cycle), ${checked}`
        : `bounded in steps: every run takes finitely many steps (the state graph has no cycle), ${checked}`,
    );
  }
  if (!timed) {
    lines.push(
      report.unboundedWaits.length === 0
        ? 'deadlineMs is Infinity: no deadline bounds a run in time, but each wait it makes has a timeout of its own'
        : 'deadlineMs is Infinity, so a run may still last for ever: nothing bounds these waits in time:',
      ...report.unboundedWaits.map((wait) => `  - ${wait}`),
    );
  }
  for (const violation of report.violations) {
    const width = Math.max(
      0,
      ...[...violation.counterexample, ...(violation.cycle ?? [])].map((step) => step.state.length),
    );
    lines.push(
      `VIOLATION ${violation.kind}: ${violation.message}`,
      '  counterexample (events from the start of a run):',
      ...steps(violation.counterexample, 1, width),
    );
    if (violation.cycle !== undefined)
      lines.push('  then, for ever:', ...steps(violation.cycle, violation.counterexample.length + 1, width));
  }
  return lines.join('\n');
}
