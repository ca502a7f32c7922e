import { liveDeliverySuite } from './live-delivery.suite.js';

liveDeliverySuite(() => ({ kind: 'sqlite' }));
