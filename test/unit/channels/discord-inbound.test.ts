import { describe, expect, it } from 'vitest';
import { nameMentions, stripBotMention } from '../../../src/channels/discord/inbound.js';

const BOT = '1300000000000000001';

describe('stripBotMention', () => {
  it('removes <@id> and <@!id> of the bot only', () => {
    expect(stripBotMention(`<@${BOT}> status please <@2000000000000000003>`, { botId: BOT })).toBe('status please <@2000000000000000003>');
    expect(stripBotMention(`hey <@!${BOT}>, go`, { botId: BOT })).toBe('hey , go');
    expect(stripBotMention(`a <@${BOT}>\nb`, { botId: BOT })).toBe('a \nb');
  });

  it("removes the bot's managed role mention", () => {
    expect(stripBotMention('<@&55> hi <@&66>', { botId: BOT, roleIds: ['55'] })).toBe('hi <@&66>');
  });

  it('removes a typed @botName but not an e-mail address or another handle', () => {
    const bot = { botId: BOT, botName: 'servicebot' };
    expect(stripBotMention('@ServiceBot ping @dave', bot)).toBe('ping @dave');
    expect(stripBotMention('mail ops@servicebot.io, @servicebot!', bot)).toBe('mail ops@servicebot.io, !');
    expect(stripBotMention('@servicebotter hi', bot)).toBe('@servicebotter hi');
  });
});

describe('nameMentions', () => {
  it('turns known user, role and channel tokens into names and leaves unknown ones', () => {
    const names = { users: new Map([['2', 'carol']]), roles: new Map([['7', 'ops']]), channels: new Map([['9', 'general']]) };
    expect(nameMentions('<@2> <@!2> <@3> <@&7> <#9>', names)).toBe('@carol @carol <@3> @ops #general');
  });
});
