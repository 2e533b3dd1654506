/**
 * Seed 001's weekly report as a hybrid loop: a deterministic skeleton (classify → draft → format) whose
 * nodes are bounded agent loops, each with its own evaluator and retry counter. The draft must be JSON
 * with the required fields `summary` and `modules`; offline, the scripted model answers it in prose twice,
 * so the reflection edge (RETRY) feeds the evaluator's reason back each time and the third attempt passes.
 *
 *   loopstate run weekly-report
 */
import { z } from 'zod';
import { createLoop, evaluators, type LoopConfig, type Model } from 'loopstate';
import { reply, scriptedModel, type ScriptedModel } from 'loopstate/testing';

/** The run's goal; `loopstate run` reads it as the loop file's goal. */
export const goal = '生成本周技术周报';

export const SAMPLE_COMMITS = [
  '优化用户登录接口，增加验证码校验',
  '修复订单超时未关闭的问题',
  '新增商品搜索的拼音匹配',
  '重构订单状态机，支持取消和退款流转',
  '修复支付回调幂等性问题',
  '优化首页加载速度，图片改为懒加载',
];

const classification = z.object({ modules: z.record(z.string(), z.array(z.string()).min(1)) });
const draft = z.object({ summary: z.string().min(1), modules: z.array(z.string().min(1)).min(1) });

export function offlineWeeklyReportModel(): ScriptedModel {
  const classified = {
    用户: [SAMPLE_COMMITS[0]],
    订单: [SAMPLE_COMMITS[1], SAMPLE_COMMITS[3], SAMPLE_COMMITS[4]],
    搜索: [SAMPLE_COMMITS[2]],
    性能: [SAMPLE_COMMITS[5]],
  };
  const report = {
    summary: '本周完成了登录安全加固、订单流程修正和性能优化三项重点工作',
    modules: [
      '用户模块：增加验证码校验',
      '订单模块：修复超时未关闭，重构状态机支持取消与退款',
      '搜索模块：新增拼音匹配',
      '性能：首页图片懒加载',
    ],
  };
  return scriptedModel([
    reply(JSON.stringify({ modules: classified })),
    // Seed 001's two non-JSON answers: each fails the JSON evaluator and is retried with its reason.
    reply('这个周报不太好写，我先看看提交记录。'),
    reply('我认为这周主要工作内容是登录优化。'),
    reply(JSON.stringify(report)),
    reply(`# 周报\n\n${report.summary}\n\n${report.modules.map((line) => `- ${line}`).join('\n')}`),
  ]);
}

export function weeklyReportConfig(model: Model) {
  return {
    model,
    instructions: '你是一个严谨的技术周报生成助手。你必须严格按照要求输出。',
    tasks: [
      {
        id: 'classify',
        prompt: `把以下提交记录按功能模块归类，输出 JSON {"modules": {"模块名": ["提交", ...]}}：\n${SAMPLE_COMMITS.map((commit) => `- ${commit}`).join('\n')}`,
        evaluate: [evaluators.schema(classification)],
      },
      {
        id: 'draft',
        prompt: '根据归类结果生成周报草稿，输出 JSON {"summary": "总体进展一句话", "modules": ["模块: 进展描述"]}。',
        evaluate: [evaluators.json({ requiredFields: ['summary', 'modules'] }), evaluators.schema(draft)],
      },
      {
        id: 'format',
        prompt: ({ outputs }) =>
          `按团队模板把草稿排版为 Markdown，以 "# 周报" 开头：\n${JSON.stringify(outputs.draft)}`,
        evaluate: [evaluators.rule((text: string) => text.startsWith('# 周报'), 'the report must start with "# 周报"')],
      },
    ],
    limits: { maxSteps: 8, maxRetries: 2, deadlineMs: 90_000 },
  } satisfies LoopConfig;
}

export function createWeeklyReportLoop(model: Model) {
  return createLoop(weeklyReportConfig(model));
}

/** A fresh offline config (the scripted model is used up by one run). */
export const offlineConfig = () => weeklyReportConfig(offlineWeeklyReportModel());

export default offlineConfig();
