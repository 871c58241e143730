/** Offer `text` as a file download (no server round trip; works offline). */
export function downloadText(fileName: string, text: string, type = 'application/json'): void {
  saveBlob(fileName, new Blob([text], { type }))
}

/** Offer a blob as a file download. */
export function saveBlob(fileName: string, blob: Blob): void {
  const url = URL.createObjectURL(blob)
  const link = document.createElement('a')
  link.href = url
  link.download = fileName
  document.body.append(link)
  link.click()
  link.remove()
  setTimeout(() => URL.revokeObjectURL(url), 1_000)
}
