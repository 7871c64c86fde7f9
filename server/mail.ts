import nodemailer, { type Transporter } from 'nodemailer';
import type { Config } from './config.js';

/** The SMTP transport of FOOTFALL_SMTP_* (README), or undefined when e-mail is not configured. */
export function createMailer(c: Config): Transporter | undefined {
  if (!c.FOOTFALL_SMTP_HOST) return undefined;
  return nodemailer.createTransport({
    host: c.FOOTFALL_SMTP_HOST,
    port: c.FOOTFALL_SMTP_PORT,
    secure: c.FOOTFALL_SMTP_SECURE,
    ...(c.FOOTFALL_SMTP_USER ? { auth: { user: c.FOOTFALL_SMTP_USER, pass: c.FOOTFALL_SMTP_PASSWORD ?? '' } } : {}),
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 20_000,
  });
}
