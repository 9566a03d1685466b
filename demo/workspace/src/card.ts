export interface Card {
  readonly id: string;
  readonly front: string;
  readonly back: string;
}
