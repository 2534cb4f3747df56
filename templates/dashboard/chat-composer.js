// The box the person writes in: the message, what is attached (images go as the API's `images`,
// any other file as `files`), Send and Stop. Enter sends, Shift+Enter starts a new line (and Enter
// while an input method is composing is left to it). Files come from the Attach button, a paste
// or a drop; the API's limits are checked here first, so nothing is sent only to be refused.
import { el } from './api.js';
import { formatSize } from './chat-messages.js';

/** The image types the API takes as `images`; any other file goes as `files`. */
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/bmp']);
const MB = 1024 * 1024;
// docs/api.md: 5 images of 5 MB, 10 files of 20 MB, a 36 MB body (base64 adds a third).
const LIMITS = { images: 5, imageBytes: 5 * MB, files: 10, fileBytes: 20 * MB, totalBytes: 26 * MB };
const MAX_INPUT_PX = 200;

function readDataUrl(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error ?? new Error(`could not read ${file.name}`));
    reader.readAsDataURL(file);
  });
}

/** Why a file cannot go with the message, or undefined. */
function refusal(file, image, attached) {
  const same = attached.filter((a) => a.image === image);
  if (file.size === 0) return `${file.name} is empty`;
  if (file.name.length > 255) return `${file.name.slice(0, 40)}…: names are at most 255 characters`;
  if (image && same.length >= LIMITS.images) return `at most ${LIMITS.images} images per message`;
  if (!image && same.length >= LIMITS.files) return `at most ${LIMITS.files} files per message`;
  const max = image ? LIMITS.imageBytes : LIMITS.fileBytes;
  if (file.size > max) return `${file.name} is ${formatSize(file.size)}; ${image ? 'an image' : 'a file'} may be up to ${formatSize(max)}`;
  const total = attached.reduce((n, a) => n + a.size, 0) + file.size;
  if (total > LIMITS.totalBytes) return `${file.name} would make the message ${formatSize(total)}; up to ${formatSize(LIMITS.totalBytes)} in all`;
  return undefined;
}

/** The attachments as the /chat body's `images` and `files` (base64, without the data: prefix). */
export function attachmentFields(attached) {
  const data = (a) => a.dataUrl.slice(a.dataUrl.indexOf(',') + 1);
  const images = attached.filter((a) => a.image).map((a) => ({ mimeType: a.mimeType, data: data(a), fileName: a.name }));
  const files = attached.filter((a) => !a.image).map((a) => ({ name: a.name, data: data(a), ...(a.mimeType ? { mimeType: a.mimeType } : {}) }));
  return { ...(images.length ? { images } : {}), ...(files.length ? { files } : {}) };
}

export function createComposer({ form, input, picker, attach, chips, note, stop, onSend, onStop }) {
  let attached = [];

  const remove = (a) => {
    attached = attached.filter((x) => x !== a);
    renderChips();
  };
  const renderChips = () =>
    chips.replaceChildren(
      ...attached.map((a) =>
        el('li', { attrs: { 'data-name': a.name } }, [
          a.image ? el('img', { attrs: { src: a.dataUrl, alt: '' } }) : null,
          el('span', { text: `${a.name} (${formatSize(a.size)})` }),
          el('button', {
            class: 'secondary',
            text: '×',
            attrs: { type: 'button', 'aria-label': `Remove ${a.name}` },
            on: { click: () => remove(a) },
          }),
        ]),
      ),
    );

  const add = async (files) => {
    const problems = [];
    for (const file of files) {
      const image = IMAGE_TYPES.has(file.type);
      const why = refusal(file, image, attached);
      if (why) {
        problems.push(why);
        continue;
      }
      try {
        attached.push({ name: file.name || (image ? 'pasted image' : 'file'), size: file.size, mimeType: file.type, image, dataUrl: await readDataUrl(file) });
      } catch (err) {
        problems.push(err.message);
      }
    }
    note.textContent = problems.length ? `Not attached: ${problems.join('; ')}.` : '';
    renderChips();
  };

  const fitHeight = () => {
    input.style.height = 'auto';
    if (input.value === '') return;
    input.style.height = `${Math.min(input.scrollHeight + 2, MAX_INPUT_PX)}px`;
  };

  const submit = () => {
    const text = input.value;
    if (!text.trim() && attached.length === 0) return;
    const sending = attached;
    attached = [];
    input.value = '';
    note.textContent = '';
    renderChips();
    fitHeight();
    onSend(text, sending);
  };

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    submit();
  });
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      submit();
    }
  });
  input.addEventListener('input', fitHeight);
  input.addEventListener('paste', (e) => {
    const files = [...(e.clipboardData?.files ?? [])];
    if (files.length === 0) return;
    e.preventDefault();
    void add(files);
  });
  form.addEventListener('dragover', (e) => e.preventDefault());
  form.addEventListener('drop', (e) => {
    e.preventDefault();
    void add([...(e.dataTransfer?.files ?? [])]);
  });
  attach.addEventListener('click', () => picker.click());
  picker.addEventListener('change', () => {
    void add([...picker.files]);
    picker.value = '';
  });
  stop.addEventListener('click', () => onStop());

  return {
    /** Stop is shown while a turn of the conversation runs (a message sent meanwhile is queued). */
    setRunning(on) {
      stop.hidden = !on;
    },
    focus: () => input.focus(),
  };
}
