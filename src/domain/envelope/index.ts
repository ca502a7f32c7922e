export * from './build-envelope.js';
export * from './envelope-marker.js';
export * from './run-meta.js';
export { utf8ByteLength, utf8Prefix } from './utf8.js';
export * from './envelope-visibility.js';
